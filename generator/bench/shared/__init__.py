"""What both sides of the sandbox use: the messages between the bench and a worker (protocol.py), how a call's
inputs are drawn (inputs.py, also the data contract a dataset consumer imports) and the CUDA driver's IPC calls
(cuda_ipc.py). Nothing here may import trusted/ or sandboxed/. This module imports nothing.
"""
