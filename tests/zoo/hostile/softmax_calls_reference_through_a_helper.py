"""A softmax function of its own that passes the call on to gradlab's reference softmax through a helper
function of the file's own."""
import gradlab
from gradlab.modules import functional as F


def _normalise(x, axis):
    return F.softmax(x, axis=axis)


@gradlab.register("softmax")
def softmax(x, axis=-1):
    return _normalise(x, axis)
