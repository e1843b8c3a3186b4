"""Reads a registered model version back with MLflow's own client and downloads its source.

Usage: mlflow_readback.py TRACKING_URI MODEL VERSION DEST
Prints JSON: the version's source, its run's params and the files the download gave.
"""
import json
import os
import sys

import mlflow
from mlflow import MlflowClient

uri, model, version, dest = sys.argv[1:5]
client = MlflowClient(tracking_uri=uri)
mv = client.get_model_version(model, version)
run = client.get_run(mv.run_id)
mlflow.set_tracking_uri(uri)
local = mlflow.artifacts.download_artifacts(artifact_uri=mv.source, dst_path=dest)
files = sorted(
    os.path.relpath(os.path.join(root, f), local)
    for root, _, names in os.walk(local)
    for f in names
)
print(json.dumps({"source": mv.source, "params": run.data.params, "files": files}))
