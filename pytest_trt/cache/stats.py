"""What one process's cache did: hits, builds, remote traffic, seconds built and saved.

The local store (:class:`~pytest_trt.cache.ArtifactCache`) and the remote tier
(:class:`~pytest_trt.cache.remote.RemoteTier`) count into one :class:`CacheStats`; xdist
workers send theirs to the controller (``workeroutput["trt_cache_stats"]``), where
``TrtSession.cache_stats()`` sums them for the terminal summary and the JSON report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["CacheStats"]


@dataclass
class CacheStats:
    """What one process's cache did: counts, bytes and seconds. Summed over xdist workers.

    ``seconds_saved`` is an estimate: for each hit, the recorded build time of the entry
    minus the time the hit took (lookup, download and verification).
    """

    local_hits: int = 0
    builds: int = 0
    remote_hits: int = 0
    remote_misses: int = 0
    remote_rejected: int = 0
    remote_errors: int = 0
    remote_uploads: int = 0
    remote_upload_failures: int = 0
    remote_lost_races: int = 0
    remote_bytes_down: int = 0
    remote_bytes_up: int = 0
    #: HTTP requests (WebDAV); filesystem calls for other transports
    remote_requests: int = 0
    build_seconds: float = 0.0
    seconds_saved: float = 0.0
    #: entries evicted by the size limit (``max_bytes``, ``--trt-cache-max-size``) or a prune, and their bytes
    evictions: int = 0
    evicted_bytes: int = 0

    @property
    def remote_bytes(self) -> int:
        return self.remote_bytes_down + self.remote_bytes_up

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["build_seconds"] = round(self.build_seconds, 4)
        data["seconds_saved"] = round(self.seconds_saved, 4)
        return data

    def add(self, other: dict | CacheStats) -> None:
        """Add another process's figures (a ``to_json()`` dict or a CacheStats)."""
        data = other.to_json() if isinstance(other, CacheStats) else dict(other or {})
        for f in fields(self):
            value = data.get(f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(self, f.name, getattr(self, f.name) + value)
