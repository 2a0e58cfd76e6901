"""Scan of every ONNX schema (every op, every opset of the default domain) for FP16/BF16
type-constraint gaps: where a node planned in a low precision cannot keep it.

Kinds of gap, and what the plan does (``pytest_trt.plan.precision_gap``):

* ``output``: a float output's type variable has no ``tensor(float16)`` /
  ``tensor(bfloat16)`` (MaxPool before opset 22 in bf16). A node of the op whose primary
  output is that variable is planned fp32 under a default precision (rule
  ``default bf16 -> fp32: ...``); an explicit rule asking for it is an
  ``UnsupportedPrecisionError``.
* ``secondary``: a second output's own variable lacks it (LayerNormalization's ``U``):
  kept in the type ONNX infers for it.
* ``operand``: a float input read through a variable of its own (no output uses it) lacks
  the type while the outputs have it, and the input is an operand of the arithmetic
  (``OPERAND_INPUTS``: Pow's exponent ``T1`` at opset 13-14 in bf16). The realization
  would have to leave it FLOAT, and TensorRT then runs the layer in FP32 (seen on GPT-2
  exports): planned fp32 the same way, where the node's input is a float tensor.
* ``parameter``: the same for a parameter of the layer (Resize ``roi``, Dropout
  ``ratio``): read as FLOAT, the node keeps its precision.
* ``function``: the schema allows the type but the op's function body does not
  type-check in it (``FUNCTION_BODY_GAPS``): planned fp32 the same way.
* ``concrete``: a float input of concrete type ``tensor(float)`` (Resize ``scales``):
  a parameter, read as FLOAT by every plan; not a precision gap, listed for completeness.

``python tests/onnx_corpus/schema_gaps.py`` prints the table and rewrites the recorded
``schema_gaps_onnx-<version>.json`` beside this file.
"""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from pytest_trt.plan import FUNCTION_BODY_GAPS, OPERAND_INPUTS

LOW = {"fp16": "tensor(float16)", "bf16": "tensor(bfloat16)"}
FLOATS = ("tensor(float)", "tensor(float16)", "tensor(bfloat16)")
PLAN_DOES = {
    "output": "planned fp32 under a default precision (rule 'default P -> fp32: ...'); an explicit rule is "
              "an UnsupportedPrecisionError",
    "secondary": "a second output kept in the type ONNX infers for it (LayerNormalization's Mean/InvStdDev "
                 "follow stash_type); the node's own output keeps the planned precision",
    "operand": "planned fp32 under a default precision where that input is a float tensor (rule 'default P -> "
               "fp32: ... would stay FLOAT'); an explicit rule is an UnsupportedPrecisionError",
    "parameter": "read as FLOAT (allowed); a parameter of the layer (Resize roi, Dropout ratio, OneHot "
                 "depth), not an operand of its arithmetic, so the node keeps the planned precision",
    "function": "planned fp32 under a default precision (FUNCTION_BODY_GAPS); an explicit rule is an "
                "UnsupportedPrecisionError",
    "concrete": "read as FLOAT by every plan (a parameter of the layer, not its data)",
}
RECORD = Path(__file__).with_name(f"schema_gaps_onnx-{onnx.__version__}.json")


def scan() -> list[dict]:
    """Every gap of the installed onnx's default-domain schemas, sorted."""
    rows = []
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain not in ("", "ai.onnx") or schema.deprecated:
            continue
        allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
        out_vars = {f.type_str for f in schema.outputs}
        float_out_vars = [v for v in out_vars if v in allowed and allowed[v] & set(FLOATS)]
        for precision, wanted in LOW.items():
            def add(kind, var, param, _precision=precision, _schema=schema):
                rows.append({"op": _schema.name, "since": _schema.since_version, "precision": _precision,
                             "kind": kind, "param": param, "type": var})
            first = schema.outputs[0].type_str if schema.outputs else None
            for f in schema.outputs:
                var = f.type_str
                if var in allowed and "tensor(float)" in allowed[var] and wanted not in allowed[var]:
                    add("output" if var == first else "secondary", var, f.name)
            outputs_have_it = any(wanted in allowed[v] for v in float_out_vars)
            for f in schema.inputs:
                var = f.type_str
                if var in allowed:
                    if var in out_vars or "tensor(bool)" in allowed[var] or "tensor(string)" in allowed[var]:
                        continue
                    if "tensor(float)" in allowed[var] and wanted not in allowed[var] and outputs_have_it:
                        operand = f.name in OPERAND_INPUTS.get(schema.name, ())
                        add("operand" if operand else "parameter", var, f.name)
                elif var == "tensor(float)" and float_out_vars:
                    add("concrete", var, f.name)
            if schema.name in FUNCTION_BODY_GAPS and wanted in allowed.get(schema.outputs[0].type_str, ()):
                add("function", schema.outputs[0].type_str, schema.outputs[0].name)
    rows.sort(key=lambda r: (r["op"], r["since"], r["precision"], r["kind"], r["param"]))
    # a concrete FLOAT parameter is the same in both precisions: one row, precision "*"
    merged, seen = [], set()
    for r in rows:
        if r["kind"] == "concrete":
            key = (r["op"], r["since"], r["param"])
            if key in seen:
                continue
            seen.add(key)
            r = {**r, "precision": "*"}
        merged.append(r)
    return merged


def summary(rows: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        key = f"{r['kind']}/{r['precision']}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def render(rows: list[dict]) -> str:
    lines = [f"{'op':<28}{'opset':>6}  {'prec':<5}{'kind':<10}{'input/output (type)':<34}plan"]
    for r in rows:
        lines.append(f"{r['op']:<28}{r['since']:>6}  {r['precision']:<5}{r['kind']:<10}"
                     f"{r['param'] + ' (' + r['type'] + ')':<34}{r['kind']}")
    lines.append("")
    lines.extend(f"{kind}: {text}" for kind, text in PLAN_DOES.items())
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    rows = scan()
    print(render(rows))
    print(summary(rows))
    RECORD.write_text(json.dumps({"onnx": onnx.__version__, "plan_does": PLAN_DOES, "gaps": rows}, indent=1) + "\n")
    print(f"wrote {RECORD}")
