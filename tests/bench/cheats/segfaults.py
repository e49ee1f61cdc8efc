"""Reads address 0: its process dies of a signal."""
import ctypes


def run(input, weight, eps):
    ctypes.string_at(0)
