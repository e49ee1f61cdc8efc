"""The model step a workload stands for: moved to analyse/workload_step.py (the Models page's estimates read it
too); kept here so that export's imports stay as they were."""

from ..analyse.workload_step import workload_stage, workload_tokens  # noqa: F401 - re-exported
