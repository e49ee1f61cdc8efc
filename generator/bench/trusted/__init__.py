"""The bench's own process, where no solution reaches: the plan, the workers' proxies and their sandbox, each
pair's measurement, the checks of outputs, the bounds taken outside a worker, the environment and the trace
store. This module imports nothing (importing the store must not bring in torch through the runner).
"""
