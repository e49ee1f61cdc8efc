"""Generated contenders: solutions the project writes for every definition it can, never by hand.

`kerneltrace contenders` renders them into dataset/solutions/ (and `--check` compares the committed
files with what it would write): the `torch.compile` of every reference that compiles (compiler.py)
and the library kernels that compute exactly a definition (libraries/). Who wrote a solution is the
folder it sits in (model/layout.py); what kind of contender an author is, is model/contender_kinds.py.
"""
