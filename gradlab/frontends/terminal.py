"""What gradlab prints for a person to read (stdout and stderr of the command line) shows the student's
text as text: a control character in it is shown escaped ("\\x1b", "\\r"), never obeyed. An exception's
message such as "\\r\\x1b[2K\\x1b[1A\\x1b[32m PASS" would otherwise erase gradlab's lines and print a verdict of
its own; a file named "\\x1b[31mred.py" would colour grade's table. The JSON and the HTML report keep the raw
text (they escape it their own way)."""
import contextlib
import re
import sys

# C0 but newline and tab, DEL, and C1: ESC (terminal sequences), CR (back to the line's start), BS, BEL, CSI...;
# and the bidirectional overrides (U+202E turns the rest of a line around)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text):
    """`text` with its control characters escaped as Python writes them in a string ("\\x1b", "\\r")."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class Escaped:
    """A stream that writes what it is given through printable(); `unescaped` is the stream itself, for
    gradlab's own terminal codes (StatusLine's erase)."""

    def __init__(self, stream):
        self.unescaped = stream

    def write(self, text):
        self.unescaped.write(printable(text))
        return len(text)

    def __getattr__(self, name):
        return getattr(self.unescaped, name)


def unescaped(stream):
    return getattr(stream, "unescaped", stream)


@contextlib.contextmanager
def escaped_output():
    """sys.stdout and sys.stderr escaped (every printer of the command line writes through them), then put
    back."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Escaped(saved[0]), Escaped(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
