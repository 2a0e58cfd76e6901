"""pytest plugin for GPU runs (``-p gpulog`` with tests/gpu on PYTHONPATH): append each process's
CUDA_VISIBLE_DEVICES, ``nvidia-smi -i`` of it and the devices CUDA sees (through torch, in xdist
workers) to ``$OUT/gpus.log``. Used for the ``--trt-gpus`` runs recorded in docs/VERIFIED.md."""
import os
import subprocess


def pytest_configure(config):
    wid = getattr(config, "workerinput", {}).get("workerid", "controller")
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    q = ["nvidia-smi", "--query-gpu=index,name,uuid", "--format=csv,noheader"]
    if cvd:
        q += ["-i", cvd]
    try:
        smi = subprocess.run(q, capture_output=True, text=True, timeout=30).stdout.strip().replace("\n", " | ")
    except Exception as exc:  # noqa: BLE001
        smi = f"nvidia-smi failed: {exc}"
    seen = "torch not imported"
    if wid != "controller":
        try:
            import torch

            n = torch.cuda.device_count()
            seen = f"CUDA sees {n} device(s): " + ", ".join(
                f"{torch.cuda.get_device_name(i)} GPU-{torch.cuda.get_device_properties(i).uuid}" for i in range(n))
        except Exception as exc:  # noqa: BLE001
            seen = f"torch: {exc}"
    line = f"{wid}: pid {os.getpid()} CUDA_VISIBLE_DEVICES={cvd!r}; nvidia-smi: {smi}; {seen}\n"
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "gpus.log"), "a") as f:
        f.write(line)
