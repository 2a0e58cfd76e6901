"""How a verdict was obtained: the one set of evidence values every stage and report uses.

Every verdict says how it was obtained (``/work``'s conventions, docs/DESIGN.md "Evidence"):

* ``observed``: read from the built engine or the parsed network (TensorRT's engine inspector);
* ``inferred``: e.g. from a fused kernel's boundary; never a pass under weak typing;
* ``unverifiable``: nothing tells;
* ``emulated``: derived from the plan's realization by an emulating backend, not TensorRT.

Values come from backends (:attr:`Engine.layer_evidence <pytest_trt.backends.base.Engine.layer_evidence>`,
the nodes of a layer report); :func:`checked` turns one outside the set into an error naming the
backend, so that nothing unknown is ever counted, least of all as observed.
"""

from __future__ import annotations

from ..errors import BackendContractError

__all__ = ["DEFAULT_LAYER_EVIDENCE", "EMULATED", "EMULATION_SOURCE", "EVIDENCE", "INFERRED", "LAYER_EVIDENCE",
           "LAYER_SOURCE_LABELS", "OBSERVED", "UNVERIFIABLE", "checked", "engine_evidence", "observed_in_emulated",
           "states_layer_evidence"]

OBSERVED = "observed"
INFERRED = "inferred"
UNVERIFIABLE = "unverifiable"
EMULATED = "emulated"
#: every evidence value, in the order the reports count them
EVIDENCE = (OBSERVED, INFERRED, UNVERIFIABLE, EMULATED)
#: what an engine may say of its layer report as a whole (:attr:`Engine.layer_evidence`)
LAYER_EVIDENCE = (OBSERVED, EMULATED)



class _Default(str):
    """``"emulated"`` as the base :class:`~pytest_trt.backends.base.Engine` says it for a backend that says nothing."""

    __slots__ = ()


#: the base Engine's ``layer_evidence`` (equal to ``"emulated"``): a distinct object, so that an error can
#: tell a backend that stated ``"emulated"`` from one that stated nothing (:func:`states_layer_evidence`)
DEFAULT_LAYER_EVIDENCE: str = _Default(EMULATED)

#: the layer report's source of an emulating backend (:meth:`LayerReport.from_emulation`)
EMULATION_SOURCE = "emulation"
#: where a layer report comes from, as its headline names it
LAYER_SOURCE_LABELS = {
    "inspector": "TensorRT engine inspector",
    "network": "TensorRT network (before build)",
    EMULATION_SOURCE: "EMULATION (not TensorRT)",
}


def checked(value, *, backend: str, what: str = "evidence", allowed: tuple[str, ...] = EVIDENCE) -> str:
    """``value`` when it is one of ``allowed``; else :class:`~pytest_trt.errors.BackendContractError`
    naming ``backend`` (an unknown value is never taken for any known one)."""
    if value not in allowed:
        raise BackendContractError(f"backend {backend!r} states {what} {value!r}, which is none of "
                                   f"{', '.join(allowed)}: fix the backend (pytest_trt.backends.base lists what "
                                   f"it may answer)")
    return value


def engine_evidence(engine) -> str:
    """How ``engine`` (an :class:`~pytest_trt.backends.base.Engine`) knows what ran,
    :attr:`~pytest_trt.backends.base.Engine.layer_evidence`, checked: one of :data:`LAYER_EVIDENCE`."""
    return checked(engine.layer_evidence, backend=engine.backend_name, what="layer_evidence",
                   allowed=LAYER_EVIDENCE)


def states_layer_evidence(engine) -> bool:
    """Whether ``engine``'s backend set :attr:`~pytest_trt.backends.base.Engine.layer_evidence` itself,
    rather than leaving the base class's default (:data:`DEFAULT_LAYER_EVIDENCE`, as a backend written
    against pytest-trt 0.1.0 does: the attribute is newer)."""
    return getattr(engine, "layer_evidence", DEFAULT_LAYER_EVIDENCE) is not DEFAULT_LAYER_EVIDENCE


def observed_in_emulated(engine, claimed: list) -> str:
    """The contract error for an engine whose layer evidence is ``emulated`` but whose report says
    ``observed`` for the nodes ``claimed``: worded for the default (:func:`states_layer_evidence` false:
    the backend said nothing) or for a backend that stated ``emulated``."""
    nodes = f"its layer report says {OBSERVED!r} for {len(claimed)} node(s) ({claimed[0]!r}, ...)"
    if not states_layer_evidence(engine):
        return (f"backend {engine.backend_name!r} does not state layer_evidence; the default is {EMULATED!r} (an "
                f"emulated report observes nothing), but {nodes}: set layer_evidence = {OBSERVED!r} on its Engine "
                f"if its layers are read from a real engine (Engine.layer_evidence is newer than pytest-trt 0.1.0; "
                f"see the CHANGELOG)")
    return (f"backend {engine.backend_name!r} states layer_evidence {EMULATED!r} but {nodes}: an emulated report "
            f"observes nothing; fix the backend (set layer_evidence = {OBSERVED!r} only where layers() reads the "
            f"built engine)")
