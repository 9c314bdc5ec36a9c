"""The benchmark pipeline's machinery shared by its stages: parameters, the Prefect environment and task runners, gates, planning, progress and the evidence-integrity measurement."""
