"""gradlab's reference modules: the implementations student code is compared
against, registered through the same `gradlab.register` a student uses.

One file per kind (CONTRACT §3). Each class keeps `self.params` and
`self.grads` (dicts name -> ndarray, reference names), and puts `backward`
right after `forward`, with the shapes in comments. gradlab imports every
submodule itself, so nothing is imported here.
"""
