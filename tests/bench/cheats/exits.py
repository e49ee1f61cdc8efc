"""Exits its process with code 3 in the first call."""
import os


def run(input, weight, eps):
    os._exit(3)
