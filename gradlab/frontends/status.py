"""One status line rewritten in place on a terminal (`gradlab check`'s progress,
`gradlab grade`'s, `gradlab train`'s bar); nothing at all on a file or a pipe."""
import shutil

from gradlab.frontends.terminal import printable, unescaped

ERASE = "\r\x1b[K"    # back to the line's start, erase it


class StatusLine:
    def __init__(self, stream):
        self.stream = unescaped(stream)      # (its own erase codes are written as they are)
        self.enabled = bool(getattr(stream, "isatty", lambda: False)())
        self.shown = False

    @staticmethod
    def columns():
        return shutil.get_terminal_size((80, 20)).columns

    def show(self, line):
        """Replace the line (cut to the terminal's width), when on a terminal."""
        if not self.enabled:
            return
        self.stream.write(ERASE + printable(line)[:max(self.columns() - 1, 10)])
        self.stream.flush()
        self.shown = True

    def clear(self):
        """Erase the line, if one was shown, so what follows starts on a clean line."""
        if self.shown:
            self.stream.write(ERASE)
            self.stream.flush()
            self.shown = False
