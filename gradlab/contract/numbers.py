"""Numbers in messages: two values reported as different are printed with
enough digits to differ, and never with more than needed; a count agrees
with its noun ("1 tensor", "2 tensors")."""


def distinct(a, b, least=6, most=17):
    """(text of a, text of b) in the fewest significant digits (at least `least`)
    that tell them apart; equal values print alike."""
    a, b = float(a), float(b)
    for digits in range(least, most + 1):
        ta, tb = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if ta != tb or a == b:
            return ta, tb
    return repr(a), repr(b)


def counted(n, noun, plural=None):
    """'1 tensor', '3 tensors' (plural: the noun's plural where it is not noun + 's')."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
