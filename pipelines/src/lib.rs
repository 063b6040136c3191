//! dc-pipeline: workload, trace, features, ranking and report in one command.
