"""Model inputs: specs, shapes and profiles, value ranges, generated and user feeds.

What a test feeds the engine decides which failures it can see. A LayerNorm kept in
FP16 by mistake looks fine on inputs drawn from ``[-1, 1]`` and breaks on a common
offset with small spread, or on one large element (see ``ARCHITECTURE.md``, "FP16
probes"). This package makes such inputs easy to ask for, reproducible, and refuses to
guess where a guess would be wrong:

* **Shapes.** Static dims come from the model. Dynamic dims (symbolic ``batch`` or
  unnamed) must be declared, per symbolic name (``dims={"batch": 2}``) or per input
  (``shapes={"x": (2, 128, 64)}``, CLI ``--input-shapes x:[2,128,64]``). An input
  that shares a symbolic dim with a declared one is inferred. TensorRT optimization
  profiles come from :func:`resolve_profile`.
* **Values.** Floats are uniform in ``[-1, 1]`` unless declared (Polygraphy defaults to
  ``[0, 1]``; a zero-mean range is closer to normalized activations and embeddings and
  does not hide sign cancellation). Booleans are uniform over ``{0, 1}``. Integer
  inputs have **no** default: token ids need ``[0, vocab_size - 1]``, a default like
  Polygraphy's ``[0, 1]`` silently tests a two-token vocabulary, so an undeclared
  integer range is an :class:`InputError`. Ranges are inclusive and use Polygraphy's
  ``--val-range`` spelling: ``x:[-1,1]`` for one input, ``[0,5]`` for all inputs
  (the key ``""`` in dicts, ``"*"`` also accepted).
* **FP16-breaking regimes.** ``offset={"x": 1000.0}`` adds a common offset to the
  declared range (so ``val_range={"x": (-0.05, 0.05)}`` plus that offset is the
  "1000 + small spread" probe); ``outliers={"x": {"count": 1, "magnitude": 400.0}}``
  sets single elements to that value (absolute: not added to an offset).
* **Reproducibility.** Every input draws from its own stream seeded by ``(seed, input
  name)``: the same seed gives the same feeds, adding outliers to one input changes
  only the outlier elements, and changing one input's shape leaves the others alone.

Errors: a malformed option string (``parse_val_range``, ``parse_input_shape``) raises
:class:`~pytest_trt.errors.UsageError`; anything that does not fit the model
(unknown input, undeclared dim or range, range outside the dtype, wrong feeds) raises
:class:`~pytest_trt.errors.InputError`. Both name the input and say what to write.

The package follows the pipeline: :mod:`.specs` (what the model declares),
:mod:`.declarations` (checking what the user declares), :mod:`.parsing` (option strings),
:mod:`.shapes` (dynamic dims, profiles), :mod:`.values` (ranges, offsets, outliers),
:mod:`.generation` (:func:`make_feeds`), :mod:`.files` (``.npz``) and :mod:`.feeds`
(:func:`check_feeds`, feed sets). Import from ``pytest_trt.inputs``.

Example::

    from pytest_trt.inputs import make_feeds, check_feeds

    feeds = make_feeds("bert.onnx", dims={"batch": 2, "sequence": 128},
                       val_range={"input_ids": (0, 30521), "attention_mask": (1, 1)})
    check_feeds("bert.onnx", feeds)
"""

from __future__ import annotations

from .declarations import ALL_INPUTS
from .feeds import FeedSet, check_feeds, input_sets, param_sets
from .files import load_feeds, save_feeds
from .generation import MAX_FEED_BYTES, check_seed, make_feeds
from .parsing import SHAPES_OPTION, VAL_RANGE_OPTION, parse_input_shape, parse_val_range, profile_from_shapes
from .shapes import resolve_profile, resolve_shapes
from .specs import InputSpec, input_specs, symbolic_dims
from .values import DEFAULT_BOOL_RANGE, DEFAULT_FLOAT_RANGE, DEFAULT_OUTLIER_MAGNITUDE, resolve_val_ranges

__all__ = [
    "ALL_INPUTS",
    "DEFAULT_FLOAT_RANGE",
    "DEFAULT_BOOL_RANGE",
    "DEFAULT_OUTLIER_MAGNITUDE",
    "MAX_FEED_BYTES",
    "SHAPES_OPTION",
    "VAL_RANGE_OPTION",
    "InputSpec",
    "FeedSet",
    "input_specs",
    "symbolic_dims",
    "resolve_shapes",
    "resolve_profile",
    "resolve_val_ranges",
    "profile_from_shapes",
    "parse_val_range",
    "parse_input_shape",
    "make_feeds",
    "check_feeds",
    "check_seed",
    "load_feeds",
    "save_feeds",
    "input_sets",
    "param_sets",
]
