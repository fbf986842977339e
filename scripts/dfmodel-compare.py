#!/usr/bin/env python3
"""comet beside DFModel's released runs (Ko et al., arXiv 2412.16432).

Reads a DFModel checkout the user gives (github.com/fengqian-ayce/DFModel:
every directory with user_input/setup.txt and a log.txt that ends with a
result), runs this build's comet on the same system, workload, degrees and
execution, and prints comet's step beside DFModel's `final_s` with their
ratio, the class of the ratio (the named difference docs/system.md gives)
and comet's step with DFModel's simplifications applied to comet's own
terms (dfmodel_terms()); then the median, p10 and p90 per study.

    scripts/dfmodel-compare.py --dfmodel ~/src/DFModel [--comet build/comet]
        [--under LLM] [--out runs.csv] [--summary]
    scripts/dfmodel-compare.py --from-csv docs/validation/dfmodel-compare.csv [...]
    scripts/dfmodel-compare.py --dfmodel ~/src/DFModel --mappings [--under LLM] [--out F]

--from-csv takes the runs from a --summary file instead of a checkout (its
inputs and DFModel's steps): after a change of comet's model it recomputes
comet's side and, with --summary, rewrites the classes that
tests/system/test_dfmodel_runs.c checks (read docs/system.md's reasons
against any class that moved).

--summary writes docs/validation/dfmodel-compare.csv instead (schema
comet.dfmodel-compare.v1, docs/FORMATS.md): each run's inputs as handed to
comet, DFModel's final_s and the class, what
tests/system/test_dfmodel_runs.c checks. A checkout may be an excerpt (the
files' tails, an EXCERPT file per run naming the commits and how the setup
was read): the phase then comes from the log's FLOP count, or from its
utilisation.

Nothing of DFModel is copied or run here: its text-format setup (system,
accelerator, memory, topology, llm, execution; the older `training` form
with `optimization:` and the DRAM inside `accelerator`) is read field by
field and written out as a comet hardware description and workload:

- chip: `core` cores of `systolic_width` x `systolic_height` arrays at
  `freq` GHz (peak 2 w h cores f), `sram_cap` bytes on chip, `dram_bw`
  GB/s and `dram_cap` bytes of DRAM; GEMMs at `compute_util` of peak when
  the run sets it (else at peak: DFModel then uses its cycle-level
  systolic model, which comet does not have); `perfect_overlap: true`
  overlaps compute, memory and network (else, and for `overlap:
  NO_OVERLAP`, nothing overlaps);
- network: one level per topology dimension (r: ring, sw: switch, fc:
  fully connected), innermost first (x, y, z); a ring's `link_bw` counts
  both directions of its link (comet's ring is two counter-rotating rings
  of half of it), a switch's or a fully connected level's is taken as the
  per-chip bandwidth; DFModel's links have no latency (0 here too);
- workload: the `llm` block (hidden, heads, head dim, sequence, layers,
  global batch), FFN 4x hidden, no LM head; the graph's phase: training
  when it has backward kernels (no recomputation), else the forward;
- configuration: TP, PP, DP as the log prints them, in the order of the
  dimensions' `par_*`, the run's microbatch, and its `num_config` as
  `--partitions` for a forward dataflow graph (capped at the kernels comet
  has in a pass; a training graph's configurations span both passes,
  comet's partitions one: its best cut).

--mappings reads instead each run directory's `dse_final.txt` (DFModel's
solved graph; only forward graphs): every kernel's name, id,
topological_number, `config:` (absent = 0) and the `shard_N` of its inner
block, the system's sram_cap, dram_bw and its topology's par_x/par_y/par_z
(TP, DP degrees), the run's num_config; it translates the configurations
into comet's `--cuts` by the rules of docs/validation/dfmodel-mappings.csv's
header (dfmodel_cuts()) and prints that file's columns, one row per run
(the paper's vendor rows are not a file's: not produced). comet is not run.

Not read (without --mappings): the dataflow graph itself (comet builds its
own layer: DFModel's separate dropout, residual-add and Q/K/V kernels are
comet's fused ones), kernel `config:` pre-assignments (setup.txt's and
dse_final.txt's: --mappings reads the latter), `tile_size`, `memory_size`, the PMU
count and capacity, `cost` and `gurobi` blocks, `second_dram_*`,
`num_layer_in_graph`, `separate_rs_ag_for_ar`. A configuration comet finds
over capacity (DFModel holds no 1F1B activations in flight) is costed with
the capacity unbounded and noted; a log ending in "Interrupt request
received" is the solver's incumbent, noted. Runs whose workload is not an
LLM (DLRM, HPL, FFT, SSM) are skipped and counted.
"""
import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile


def num(text, key, default=None):
    m = re.search(r"^\s*%s\s*:\s*([-+0-9.eE]+)" % re.escape(key), text, re.M)
    return float(m.group(1)) if m else default


def word(text, key, default=None):
    m = re.search(r"^\s*%s\s*:\s*[\"']?([A-Za-z_]+)[\"']?" % re.escape(key), text, re.M)
    return m.group(1) if m else default


def block(text, name):
    """The body of the first `name {...}` block (braces balanced)."""
    m = re.search(r"(^|\s)%s\s*\{" % re.escape(name), text)
    if not m:
        return None
    i, depth = m.end(), 1
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]



TOPOS = ["r_r_r", "r_sw_sw", "sw_sw_sw", "r_r", "r_fc", "r_sw", "sw_sw", "fc_fc", "r", "sw",
         "fc"]


def parse_setup(path):
    with open(path) as f:
        text = f.read()
    llm = block(text, "llm")
    system = block(text, "system")
    if llm is None or system is None:
        return None
    # DFModel's older setups (the Calculon comparison's) state the DRAM inside
    # `accelerator` and the run in a `training` block (`optimization:`)
    acc = block(system, "accelerator")
    mem = block(system, "memory") or acc
    topo = None
    for t in TOPOS:
        body = block(system, t)
        if body is not None:
            topo = (t, body)
            break
    if acc is None or mem is None or topo is None:
        return None
    dims = []
    for axis, kind in zip("xyz", topo[0].split("_")):
        dims.append({"kind": kind, "size": int(num(topo[1], axis, 0) or 0),
                     "bw": num(topo[1], "link_bw_" + axis, 0),
                     "par": word(topo[1], "par_" + axis, "")})
    execution = (block(text, "execution") or block(text, "miscellany") or block(text, "training")
                 or "")
    style = word(execution, "execution_style") or word(execution, "optimization")
    overlap = (word(execution, "perfect_overlap", "false") or "").lower() == "true"
    if word(execution, "overlap"):
        overlap = word(execution, "overlap") not in ("NO_OVERLAP",)
    cu = re.search(r"^\s*compute_util\s*:\s*([0-9.eE+-]+)", execution, re.M)
    return {
        # an excerpt without the graph leaves the phase to the log (phase_from_log)
        "bwd": ("fwd_bwd: BWD" in text) if "dataflow_graph" in text else None,
        "chips": int(num(system, "num_chip", 1)),
        "core": int(num(acc, "core")), "w": int(num(acc, "systolic_width")),
        "h": int(num(acc, "systolic_height")), "sram": num(acc, "sram_cap"),
        "freq": num(acc, "freq"), "dram_bw": num(mem, "dram_bw"),
        "dram_cap": num(mem, "dram_cap"), "topo": topo[0], "dims": dims,
        "hidden": int(num(llm, "hidden_dim")), "head_dim": int(num(llm, "head_dim")),
        "heads": int(num(llm, "num_head")), "seq": int(num(llm, "seq_len")),
        "layers": int(num(llm, "num_layer")),
        "batch": int(num(llm, "global_batch_size") or num(execution, "global_batch_size")),
        "mb": int(num(llm, "micro_batch_size") or num(execution, "micro_batch_size", 1)),
        "style": style or "KERNEL_BY_KERNEL",
        "num_config": int(num(execution, "num_config", 0) or 0),
        "overlap": overlap,
        "util": float(cu.group(1)) if cu else None,
    }


def parse_log(path):
    """DFModel's result: the lines after its statistics (None: no result)."""
    with open(path, errors="replace") as f:
        text = f.read()
    out = {}
    # result lines of DFModel's versions: final_s (older: sec_per_batch), the
    # utilisation as `util` or `System FLOPS Utilization` (older logs print a
    # rate under `util`, not a fraction: dropped), FLOP or `Workload FLOP`
    for key, name in (("final_s", "sec_per_batch"), ("final_s", "final_s"), ("TP", "TP"),
                      ("PP", "PP"), ("DP", "DP"), ("util", "System FLOPS Utilization"),
                      ("util", "util"), ("FLOP", "FLOP"), ("FLOP", "Workload FLOP")):
        m = re.findall(r"^%s\s+([-+0-9.eE]+)\s*$" % re.escape(name), text, re.M)
        if m:
            out[key] = float(m[-1])
    if out.get("util", 0) > 1:
        del out["util"]
    # a run stopped by hand: DFModel's incumbent, not its optimum
    out["interrupted"] = "Interrupt request received" in text
    return out if "final_s" in out else None


def phase_from_log(s, log):
    """Training or forward from DFModel's own FLOP count: a training step is about three
    forward passes (2 FLOP per weight and token forward, 4 backward), so FLOP over the
    forward's 2 x params x tokens is ~3 for training and ~1 for a forward graph."""
    if "FLOP" not in log and log.get("util") and s["freq"]:
        # the log's utilisation is FLOP / (final_s chips peak) (intra_chip.py)
        log["FLOP"] = log["util"] * log["final_s"] * s["chips"] * (
            2e9 * s["w"] * s["h"] * s["core"] * s["freq"])
    if "FLOP" not in log:
        return None
    params = s["layers"] * 12.0 * s["hidden"] ** 2
    return log["FLOP"] / (2.0 * params * s["batch"] * s["seq"]) > 2.0


def mesh_dims(n):
    a = int(math.sqrt(n))
    while a > 1 and n % a:
        a -= 1
    return [n // a, a]


def hw_yaml(s, path):
    kinds = {"r": "ring", "sw": "switch", "fc": "full"}
    lines = []
    for d in s["dims"]:
        if d["size"] <= 0:
            continue
        bw = d["bw"] / 2 if d["kind"] == "r" else d["bw"]
        lines.append("    - {topology: %s, dims: [%d], link_bw: %g GB/s, hop_latency: 0 ns}"
                     % (kinds[d["kind"]], d["size"], bw))
    if not lines:
        lines.append("    - {topology: switch, dims: [1], link_bw: 1 GB/s, hop_latency: 0 ns}")
    peak = 2.0 * s["w"] * s["h"] * s["core"] * s["freq"] / 1e3  # TFLOP/s
    gemm = "{engine: systolic, rows: %d, cols: %d, arrays: 1%s%s}" % (
        s["w"], s["h"], ", mapping: spatial" if s.get("spatial") else "",
        ", efficiency: %g" % s["util"] if s["util"] else "")
    my, mx = mesh_dims(s["core"])
    with open(path, "w") as f:
        f.write("""schema: comet.hw.v2
name: dfmodel-run
kind: accelerator
clock: %g GHz
bytes_per_elem: 2
overlap: [%s]
clusters_per_chip: 1
clusters:
  count: %d
  network:
%s
cores:
  count: %d
  network: {topology: mesh2d, dims: [%d, %d], link_bw: 1 TB/s, hop_latency: 0 ns}
memory:
  dram: {capacity: %.0f B, bw: %g GB/s, shared_by: chip}
  global_buffer: {capacity: %.0f B, bw: 10 TB/s}
  local_buffer: {capacity: 1 KiB, bw: 10 TB/s}
gemm: %s
vector:
  width: %d
compute: {bf16: %g TFLOP/s}
""" % (s["freq"], "gemm, vector, memory, network" if s["overlap"] else "none", s["chips"],
            "\n".join(lines), s["core"], mx, my, s["dram_cap"], s["dram_bw"], s["sram"], gemm,
            s["w"], peak))


def weight_bytes(s, tp, name):
    """Weight bytes of one of comet's GEMM kernels on a chip (2-byte words)."""
    h, ad, ffn = s["hidden"], s["heads"] * s["head_dim"], 4 * s["hidden"]
    per = {"qkv": 3 * h * ad, "q": h * ad, "k": h * ad, "v": h * ad, "proj": ad * h,
           "ffn_in": h * ffn, "ffn_out": ffn * h}
    return 2.0 * per.get(name, 0) / tp


SWITCHES = ("weights", "stash", "overlap", "bubble", "p2p")


def dfmodel_terms(s, log, j, use=SWITCHES):
    """comet's step with DFModel's simplifications (those in `use`) applied to
    comet's own terms (every number from comet's breakdown and the stated
    model sizes; DFModel @04f93d5, src/intra_chip.py):

    - weights: DFModel's memory latency is its DRAM-crossing edges plus an
      explicit `memory_size` (0 in every LLM setup); weights count toward
      capacity only (Memory_Latency): each partition's memory time loses its
      weight reads (d<gemm>: once; w<gemm>: the gradient read and written) at
      the run's DRAM rate;
    - stash: with one configuration (num_config 1) a microbatch's forward and
      backward kernels share it, so nothing is stored for the backward: the
      stored activations (comet's activation memory over the microbatches in
      flight) leave the forward's and backward's memory time;
    - overlap: with perfect_overlap a configuration takes max(compute,
      memory, network) (Per_Config_II), its own collective included;
    - bubble: (PP - 1) / (layer_per_stage - 1) stage times (pipeline_factor),
      not 1F1B's PP - 1 (the same at one layer per stage);
    - p2p: the pipeline's point-to-point transfers once a batch,
      `p2p_latency = P2P_ratio * Intermediate * layers` with Intermediate =
      2 hidden seq word (an activation and its gradient), outside the
      per-microbatch Per_Config_II; comet sends each microbatch's (hidden
      under compute when the network overlaps, added when not).

    Returns (step, the switches that change anything) or (None, reason)."""
    det = j.get("partition_detail") or {}
    bd = j.get("breakdown_s") or {}
    if not det.get("forward"):
        return None, "no partition detail"
    tp, pp = j["parallel"]["tp"], j["parallel"]["pp"]
    bw = s["dram_bw"] * 1e9
    pinned = (j.get("weights_on_chip_bytes") or 0) > 0
    stash = 0.0
    one_graph = s["style"] == "DATAFLOW" and s["num_config"] == 1 and s["bwd"]
    if one_graph and "stash" in use:
        mbs = s["batch"] / j["parallel"]["dp"] / j["parallel"]["microbatch"]
        stash = j["memory_per_chip"]["activations"] / (min(pp, mbs) * math.ceil(s["layers"] / pp))
    L = L2 = 0.0
    what = set()
    for ph in ("forward", "backward"):
        parts = det.get(ph) or []
        for q in parts:
            c, m, n = q["compute_s"], q["memory_s"], q["network_s"]
            passes = q.get("weight_passes") or 1
            w = 0.0
            if not pinned and "weights" in use:
                for k in q["kernels"].split("+"):
                    if k.startswith("w") and weight_bytes(s, tp, k[1:]):
                        w += 2 * weight_bytes(s, tp, k[1:]) * (1 + (passes - 1) * 2)
                    elif k.startswith("d") and weight_bytes(s, tp, k[1:]):
                        w += weight_bytes(s, tp, k[1:])
                    else:
                        w += weight_bytes(s, tp, k) * passes
                if w > 0:
                    what.add("weights")
            if stash > 0 and len(parts) == 1:
                w += stash
                what.add("stash")
            m2 = max(0.0, m - w / bw)
            L += q["time_s"]
            if s["overlap"] and "overlap" in use:
                t2 = max(c, m2, n)
                if n > 0 and s["style"] != "DATAFLOW":
                    what.add("overlap")
            elif s["overlap"]:
                t2 = max(c, m2) + (n if s["style"] != "DATAFLOW" else 0)
                if s["style"] == "DATAFLOW":
                    t2 = max(c, m2, n)
            else:
                t2 = c + m2 + n
            L2 += t2
    if L <= 0:
        return None, "no layer time"
    rest = bd.get("pp_network", 0) + bd.get("dp_network", 0) + bd.get("optimizer", 0)
    bub = bd.get("bubble", 0)
    lay = j["step_s"] - bub - rest
    if "p2p" in use and pp > 1 and bd.get("pp_network", 0) > 0:
        ppbw = [d["bw"] for d in s["dims"] if d["par"].upper() == "PP" and d["size"] > 0]
        if ppbw:
            dfm = 2.0 * s["hidden"] * s["seq"] * 2 * s["layers"] / (ppbw[0] * 1e9)
            if abs(dfm - bd["pp_network"]) > 0.01 * j["step_s"]:
                what.add("p2p")
            rest += dfm - bd["pp_network"]
    ls = math.ceil(s["layers"] / pp)
    ccc = ls - 1 if ls >= 2 and "bubble" in use else 1
    if ccc > 1 and bub > 0:
        what.add("bubble")
    step = lay * L2 / L + bub * L2 / L / ccc + rest
    return step, "+".join(x for x in SWITCHES if x in what)


# Out-of-band runs the switches do not bring into 0.8-1.25, each with the
# named reason docs/system.md ("DFModel's released runs") gives
MANUAL = {
    "LLM/Compare_w_existing/Calculon/fix_DP/16_8_32": "mismatch",
}


def classify(rel, s, log, r, res, study):
    """The named difference behind a run's ratio: none (within 0.8-1.25); a
    run DFModel's side disqualifies (MANUAL, or an interrupted solver whose
    incumbent the switches do not bring into the band); comet slower (> 1.25):
    the one switch of dfmodel_terms() that brings the ratio closest to 1;
    comet faster (< 0.8) on a dataflow run of Fig. 19 or Table VI: dfm-util,
    DFModel's configurations computing below the peak (its Compute_Latency)."""
    if 0.8 <= r <= 1.25:
        return "none"
    if rel in MANUAL:
        return MANUAL[rel]
    t_all, _ = dfmodel_terms(s, log, res)
    if log.get("interrupted") and not (t_all and 0.8 <= t_all / log["final_s"] <= 1.25):
        return "interrupted"
    if r > 1.25:
        best, dist = "", abs(math.log(r))
        for sw in SWITCHES:
            t, what = dfmodel_terms(s, log, res, (sw,))
            if t and sw in what.split("+"):
                d = abs(math.log(t / log["final_s"]))
                if d < dist - 0.05:
                    best, dist = sw, d
                elif (not best and t / log["final_s"] < 0.8 and s["style"] == "DATAFLOW"
                      and study in ("fig19", "table6")):
                    # the switch overshoots to DFModel's below-peak configurations
                    best = sw + "+dfm-util"
        return best or "unexplained"
    if study in ("fig19", "table6") and s["style"] == "DATAFLOW":
        return "dfm-util"
    return "unexplained"


def runs_from_csv(path, under=""):
    """(dir, setup, log) as parse_setup() and parse_log() give them, from the
    rows of a --summary file."""
    runs = []
    try:
        f = open(path)
    except OSError as e:
        sys.exit("comet: --from-csv %s: %s" % (path, e.strerror))
    with f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for n, r in enumerate(rows, 2):
            try:
                if not r["dir"].startswith(under):
                    continue
                order = r["order"].split("-")
                dims = []
                for i, (kind, size, bw) in enumerate(zip(r["topo"].split("_"),
                                                         r["dims"].split("x"),
                                                         r["link_gbps"].split("/"))):
                    dims.append({"kind": kind, "size": int(size), "bw": float(bw),
                                 "par": order[i].upper() if i < len(order) else ""})
                s = {"bwd": r["phase"] == "train", "chips": int(r["chips"]),
                     "core": int(r["cores"]), "w": int(r["array_w"]), "h": int(r["array_h"]),
                     "sram": float(r["sram_b"]), "freq": float(r["freq_ghz"]),
                     "dram_bw": float(r["dram_gbps"]), "dram_cap": float(r["dram_cap_b"]),
                     "topo": r["topo"], "dims": dims, "hidden": int(r["hidden"]),
                     "head_dim": int(r["head_dim"]), "heads": int(r["heads"]),
                     "seq": int(r["seq"]), "layers": int(r["layers"]),
                     "batch": int(r["batch"]), "mb": int(r["microbatch"]),
                     "style": "DATAFLOW" if r["execution"] == "dataflow" else
                              "KERNEL_BY_KERNEL",
                     "num_config": int(r["num_config"]), "overlap": r["overlap"] == "1",
                     "util": float(r["compute_util"]) or None,
                     "_excerpt": {"setup": r["setup_commit"], "log": r["log_commit"],
                                  "src": r["setup_read"]}}
                log = {"final_s": float(r["dfmodel_s"]), "TP": float(r["tp"]),
                       "PP": float(r["pp"]), "DP": float(r["dp"]),
                       "interrupted": r["interrupted"] == "1"}
            except (KeyError, ValueError, IndexError, AttributeError) as e:
                sys.exit("comet: %s:%d: %s" % (path, n, e))
            runs.append((r["dir"], s, log))
    return runs


def excerpt_info(root, rel):
    """(setup commit, log commit, how the setup was read) from an excerpt
    checkout's EXCERPT file; a full checkout has none."""
    info = {"setup": "", "log": "", "src": "checkout"}
    try:
        with open(os.path.join(root, rel, "EXCERPT")) as f:
            for line in f:
                w = line.split()
                if w and w[0] == "setup":
                    info["setup"], info["src"] = w[1], w[2] if len(w) > 2 else ""
                elif w and w[0] == "log":
                    info["log"] = w[1]
    except OSError:
        pass
    return info


def run_comet(args, s, log, tmp, tag):
    hw, wl = os.path.join(tmp, tag + ".hw.yaml"), os.path.join(tmp, tag + ".llm.yaml")
    hw_yaml(s, hw)
    with open(wl, "w") as f:
        f.write("schema: comet.llm.v1\nname: %s\nhidden: %d\nheads: %d\nhead_dim: %d\n"
                "ffn: %d\nlayers: %d\nseq: %d\nvocab: 0\nglobal_batch: %d\ndtype: bf16\n"
                % (tag, s["hidden"], s["heads"], s["head_dim"], 4 * s["hidden"], s["layers"],
                   s["seq"], s["batch"]))
    deg = {"tp": int(log.get("TP", 1)), "pp": int(log.get("PP", 1)), "dp": int(log.get("DP", 1))}
    order = [d["par"].lower() for d in s["dims"] if d["par"].lower() in deg]
    order += [k for k in ("tp", "dp", "pp") if k not in order]
    spec = "tp=%d,pp=%d,dp=%d,microbatch=%d,order=%s" % (deg["tp"], deg["pp"], deg["dp"],
                                                         s["mb"], "-".join(order[:3]))
    s["_order"], s["_partitions"] = "-".join(order[:3]), 0
    cmd = [args.comet, "predict", "--hw", hw, "--workload", wl, "--batch", str(s["batch"]),
           "--phase", "train" if s["bwd"] else "forward", "--no-seq-parallel",
           "--execution", "dataflow" if s["style"] == "DATAFLOW" else "kernel",
           "--parallel", spec, "--json"]
    if s["bwd"]:
        cmd += ["--recompute", "none"]
    if s["style"] == "DATAFLOW" and s["num_config"] > 0 and not s["bwd"]:
        # DFModel's num_config counts the configurations of the whole graph;
        # comet's --partitions those of one pass: the same only for a forward
        # graph (training: comet's best cut of each pass)
        cmd += ["--partitions", str(s["num_config"])]
    p = subprocess.run(cmd, capture_output=True, text=True)
    note = ""
    err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    if p.returncode and "--partitions" in cmd and "no cut of a layer's pass" in err:
        # more configurations than comet has kernels in the pass (DFModel's
        # graph has 18 forward kernels, comet's 13): the largest count comet cuts
        i = cmd.index("--partitions") + 1
        n = int(cmd[i])
        while p.returncode and n > 1 and "no cut of a layer's pass" in err:
            n -= 1
            cmd[i] = str(n)
            p = subprocess.run(cmd, capture_output=True, text=True)
            err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
        note = "num_config %d > comet's kernels: --partitions %d" % (s["num_config"], n)
    if "--partitions" in cmd:
        s["_partitions"] = int(cmd[cmd.index("--partitions") + 1])
    if p.returncode and ": memory: " in err:
        # DFModel's capacity check holds the weights and one microbatch of one
        # partition's activations (intra_chip.py: dram_bytes_total), not the
        # activations 1F1B keeps in flight: comet's step with the capacity
        # unbounded (a capacity changes no time term), the overflow noted
        note = (note + "; " if note else "") + "over capacity in comet (" + err.split(
            ": memory: ", 1)[1] + ")"
        big = dict(s, dram_cap=1e18)
        hw_yaml(big, hw)
        p = subprocess.run(cmd, capture_output=True, text=True)
        err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"
    if p.returncode:
        return None, err, None
    d = json.loads(p.stdout)
    r = d.get("result", d)
    step = r.get("step_s")
    if step is None or not r.get("feasible", True):
        return None, r.get("reason", "infeasible"), None
    return step, note, r


# DFModel's kernels of one GPT layer's forward graph, in comet's forward order
# (docs/validation/dfmodel-mappings.csv's header): a pair is a dropout and the
# residual add comet fuses into one kernel; Add_Prev_Layer (the previous
# layer's residual add, comet's res2 of the layer before) has no comet kernel.
DFM_KERNELS = [("LayerNorm_1", "ln1"), ("Q", "q"), ("K", "k"), ("V", "v"),
               ("MHA_GEMM_1", "score"), ("SOFTMAX", "softmax"), ("DropOut_1", "attn_drop"),
               ("MHA_GEMM_2", "context"), ("PROJ_GEMM", "proj"), (("DropOut_2", "Add_1"), "res1"),
               ("LayerNorm_2", "ln2"), ("FFN0", "ffn_in"), ("GeLU", "act"), ("FFN1", "ffn_out"),
               (("DropOut_3", "Add_2"), "res2")]
DFM_PREV_LAYER = "Add_Prev_Layer"

MAPPING_COLS = ["id", "study", "run_dir", "commit", "sram_mib", "dram_gbps", "tp", "dp",
                "num_config", "dfmodel_partitions", "shard_n", "cuts", "consecutive", "note"]


def blocks(text, name):
    """The bodies of every `name {...}` block in text (braces balanced)."""
    out = []
    for m in re.finditer(r"(^|\s)%s\s*\{" % re.escape(name), text):
        i, depth = m.end(), 1
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i - 1])
    return out


def parse_dse_final(path):
    """A dse_final.txt (DFModel's solved graph, protobuf text): its kernels
    (name, id, topological_number, config, fwd_bwd, shard_N of the kernel's
    inner block; a field the file leaves out is protobuf's default 0) and the
    system and execution fields the mapping table states."""
    with open(path) as f:
        text = f.read()
    graph, system = block(text, "dataflow_graph"), block(text, "system")
    if graph is None or system is None:
        return None
    kernels = []
    for body in blocks(graph, "kernels"):
        top = body
        while "{" in top:  # the kernel's own fields, without its inner blocks
            top = re.sub(r"[A-Za-z_0-9]+\s*\{[^{}]*\}", "", top)
        name = re.search(r'^\s*name\s*:\s*"([^"]*)"', top, re.M)
        if not name or num(body, "shard_N") is None:
            return None
        kernels.append({"name": name.group(1), "id": int(num(top, "id", 0)),
                        "topo": int(num(top, "topological_number", 0)),
                        "config": int(num(top, "config", 0)),
                        "bwd": word(top, "fwd_bwd", "FWD") == "BWD",
                        "shard_n": int(num(body, "shard_N"))})
    acc = block(system, "accelerator")
    mem = block(system, "memory") or acc
    deg = {}
    for t in TOPOS:
        body = block(system, t)
        if body is not None:
            for axis in "xyz":
                par = word(body, "par_" + axis)
                if par:
                    deg[par] = deg.get(par, 1) * int(num(body, axis, 1))
            break
    execution = (block(text, "execution") or block(text, "miscellany") or block(text, "training")
                 or "")
    if acc is None or mem is None or not kernels:
        return None
    return {"kernels": kernels, "sram": num(acc, "sram_cap"), "dram_bw": num(mem, "dram_bw"),
            "tp": deg.get("TP", 1), "dp": deg.get("DP", 1),
            "num_config": int(num(execution, "num_config", 0) or 0),
            "style": word(execution, "execution_style") or "KERNEL_BY_KERNEL",
            "topo": t if deg else ""}


def dfmodel_cuts(kernels):
    """DFModel's configuration assignment as comet's --cuts string, by the
    translation rules docs/validation/dfmodel-mappings.csv's header states:
    each DFModel kernel is the comet kernel of DFM_KERNELS (DropOut_2+Add_1 is
    res1, DropOut_3+Add_2 is res2; Add_Prev_Layer is dropped, and a
    configuration it alone leaves is no partition); a kernel without `config:`
    is in configuration 0. Where the assignment is not a run of consecutive
    comet kernels:
    (1) a dropout and its residual add in different configurations: the merged
        comet kernel goes with its Add (the same bytes cross the boundary; the
        residual is read where DFModel reads it);
    (2) a kernel whose comet neighbours on both sides share a configuration
        other than its own joins their configuration (K or V placed apart from
        its siblings: the GEMM reads and writes the same bytes either way).
        Applied left to right in comet's order, each kernel seeing its left
        neighbour's configuration after the rule (so of V and MHA_GEMM_1 split
        across Q,K and SOFTMAX, V moves, as the table has it).
    Returns (cuts, consecutive, notes): consecutive is 1 when no rule applied.
    Raises ValueError when a kernel is missing or a configuration is still not
    one run of comet's kernels in configuration order after the rules."""
    cfg = {k["name"]: k["config"] for k in kernels}
    seq, notes = [], []
    for dfm, comet in DFM_KERNELS:
        for n in dfm if isinstance(dfm, tuple) else (dfm,):
            if n not in cfg:
                raise ValueError("no kernel %s" % n)
        if isinstance(dfm, tuple):
            drop, add = dfm
            if cfg[drop] != cfg[add]:
                notes.append("rule 1: %s (%s %d, %s %d) with %s" % (comet, drop, cfg[drop], add,
                                                                   cfg[add], add))
            seq.append([comet, cfg[add]])
        else:
            seq.append([comet, cfg[dfm]])
    for i in range(1, len(seq) - 1):
        left, right = seq[i - 1][1], seq[i + 1][1]
        if left == right != seq[i][1]:
            notes.append("rule 2: %s (%d) joins %s and %s (%d)" % (seq[i][0], seq[i][1],
                                                                  seq[i - 1][0], seq[i + 1][0],
                                                                  left))
            seq[i][1] = left
    parts = []
    for comet, c in seq:
        if parts and parts[-1][0] == c:
            parts[-1][1].append(comet)
        else:
            parts.append((c, [comet]))
    order = [c for c, _ in parts]
    if order != sorted(set(order)):
        raise ValueError("configurations %s are not runs of comet's kernels in order after "
                         "rules 1 and 2" % "/".join(map(str, order)))
    return ",".join("+".join(names) for _, names in parts), 0 if notes else 1, notes


def mapping_id(rel, study, d):
    """A row id after the table's: study, mapping (kbk, existing, df) and
    the topology (ring, torus) or the SRAM and DRAM sizes of the cell."""
    base = os.path.basename(rel)
    m = re.match(r"([a-z]+)_sram_([a-z]+)_dram$", base)
    if study == "fig19" and m:
        return "fig19-%s-%s-%s" % (os.path.basename(os.path.dirname(rel)).lower(), m.group(1),
                                   m.group(2))
    m = re.match(r"([a-z]+)_\d+x\d+$", base)
    if study == "table6" and m and d["topo"] in ("r", "r_r"):
        return "table6-%s-%s" % ({"dfmodel": "df"}.get(m.group(1), m.group(1)),
                                 "ring" if d["topo"] == "r" else "torus")
    return rel.replace("/", "-")


def mapping_row(root, rel, d):
    """One dfmodel-mappings.csv row (comet.dfmodel-mappings.v1) from a parsed
    dse_final.txt."""
    ks = sorted(d["kernels"], key=lambda k: (k["topo"], k["id"]))
    n = max([d["num_config"]] + [k["config"] + 1 for k in ks])
    confs = [[k for k in ks if k["config"] == c] for c in range(n)]
    shard = []
    for c in confs:
        v = [str(k["shard_n"]) for k in c]
        shard.append(v[0] if len(set(v)) == 1 else "/".join(v))
    cuts, consecutive, notes = dfmodel_cuts(ks)
    if d["style"] != "DATAFLOW":
        notes.insert(0, "execution_style %s" % d["style"])
    commit = ""
    try:
        with open(os.path.join(root, rel, "EXCERPT")) as f:
            for line in f:
                w = line.split()
                if len(w) > 1 and w[0] == "dse_final":
                    commit = w[1]
    except OSError:
        pass
    study = study_of(rel)
    return [mapping_id(rel, study, d), study, rel, commit, "%.10g" % (d["sram"] / 2**20),
            "%g" % d["dram_bw"], d["tp"], d["dp"], d["num_config"],
            "|".join("+".join(k["name"] for k in c) for c in confs), "|".join(shard), cuts,
            consecutive, "; ".join(notes)]


def mappings(args, root):
    """--mappings: every run directory under root with a dse_final.txt of a
    forward-only graph, as dfmodel-mappings.csv rows."""
    rows, skipped = [], 0
    for dirpath, _, files in os.walk(os.path.join(root, args.under)):
        if "dse_final.txt" not in files:
            continue
        rel = os.path.relpath(dirpath, root)
        d = parse_dse_final(os.path.join(dirpath, "dse_final.txt"))
        if d is None or any(k["bwd"] for k in d["kernels"]):
            skipped += 1
            continue
        try:
            rows.append(mapping_row(root, rel, d))
        except ValueError as e:
            print("# %s: %s (skipped)" % (rel, e), file=sys.stderr)
            skipped += 1
    rows.sort(key=lambda r: (r[1], r[2]))
    # --out is written whole or not at all: a temporary file renamed over it
    out = (tempfile.NamedTemporaryFile("w", newline="", delete=False,
                                       dir=os.path.dirname(os.path.abspath(args.out)))
           if args.out else sys.stdout)
    out.write("# comet.dfmodel-mappings.v1 rows (docs/FORMATS.md) from the dse_final.txt files "
              "under %s,\n# as scripts/dfmodel-compare.py --mappings translates them (the "
              "vendor rows are the paper's, not a file's)\n" % (args.under or "."))
    w = csv.writer(out, lineterminator="\n")
    w.writerow(MAPPING_COLS)
    w.writerows(rows)
    if args.out:
        out.close()
        os.replace(out.name, args.out)
    print("# %d mappings, %d skipped (no forward graph of comet's kernels)"
          % (len(rows), skipped), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--dfmodel", help="a DFModel checkout")
    src.add_argument("--from-csv", metavar="CSV",
                     help="the runs as a --summary file states them (e.g. "
                          "docs/validation/dfmodel-compare.csv), without a checkout: to "
                          "recompute comet's side and the classes after a model change")
    ap.add_argument("--comet", default="build/comet")
    ap.add_argument("--under", default="", help="only runs under this folder (e.g. LLM)")
    ap.add_argument("--out", help="CSV file (default: stdout)")
    ap.add_argument("--summary", action="store_true",
                    help="the runs' inputs, DFModel's step and the class of each ratio "
                         "(docs/validation/dfmodel-compare.csv)")
    ap.add_argument("--mappings", action="store_true",
                    help="with --dfmodel: DFModel's own partitions instead, read from each "
                         "forward run's dse_final.txt and translated into comet's --cuts "
                         "(rows of docs/validation/dfmodel-mappings.csv; no comet run)")
    args = ap.parse_args()
    runs, skipped = [], 0
    root = os.path.abspath(args.dfmodel or ".")
    if args.mappings:
        if not args.dfmodel or args.summary:
            sys.exit("comet: --mappings: needs --dfmodel DIR (and no --summary)")
        if not os.path.isdir(root):
            sys.exit("comet: --dfmodel %s: not a directory" % args.dfmodel)
        return mappings(args, root)
    if args.from_csv:
        runs = runs_from_csv(args.from_csv, args.under)
    elif not os.path.isdir(root):
        sys.exit("comet: --dfmodel %s: not a directory" % args.dfmodel)
    for dirpath, _, files in ([] if args.from_csv else os.walk(os.path.join(root, args.under))):
        if os.path.basename(dirpath) != "user_input" or "setup.txt" not in files:
            continue
        rundir = os.path.dirname(dirpath)
        logp = os.path.join(rundir, "log.txt")
        if not os.path.exists(logp):
            continue
        s = parse_setup(os.path.join(dirpath, "setup.txt"))
        log = parse_log(logp)
        if s is None or log is None:
            skipped += 1
            continue
        if s["bwd"] is None:
            s["bwd"] = phase_from_log(s, log)
            if s["bwd"] is None:
                skipped += 1
                continue
        runs.append((os.path.relpath(rundir, root), s, log))
    runs.sort()
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    w = csv.writer(out, lineterminator="\n")
    if args.summary:
        out.write("# schema comet.dfmodel-compare.v1 (docs/FORMATS.md): DFModel's released runs "
                  "(github.com/fengqian-ayce/DFModel)\n# as scripts/dfmodel-compare.py "
                  "--summary read them: the system, workload and degrees comet runs\n# and "
                  "DFModel's final_s; class names the difference docs/system.md gives for the "
                  "ratio.\n")
        w.writerow(SUMMARY_COLS)
    else:
        w.writerow(["dir", "study", "class", "execution", "phase", "tp", "pp", "dp",
                    "dfmodel_s", "comet_s", "comet_over_dfmodel", "comet_dfm_terms_s",
                    "terms_over_dfmodel", "switched", "note"])
    by_study = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (rel, s, log) in enumerate(runs):
            s["spatial"] = spatial_chip(study_of(rel))
            step, note, res = run_comet(args, s, log, tmp, "run%d" % i)
            ratio = step / log["final_s"] if step else float("nan")
            t_step, what = dfmodel_terms(s, log, res) if res else (None, "")
            if log.get("interrupted"):
                note = "DFModel's solver interrupted (its incumbent)" + ("; " + note if note else "")
            st = study_of(rel)
            cls = classify(rel, s, log, ratio, res, st) if res else "failed"
            if step:
                by_study.setdefault(st, []).append(
                    (ratio, t_step / log["final_s"] if t_step else float("nan")))
            if args.summary:
                ex = s.get("_excerpt") or excerpt_info(root, rel)
                w.writerow([rel, ex["setup"], ex["log"], ex["src"], st, cls,
                            "dataflow" if s["style"] == "DATAFLOW" else "kernel",
                            "train" if s["bwd"] else "forward", s["chips"], s["core"], s["w"],
                            s["h"], "%g" % s["freq"], "%.0f" % s["sram"], "%g" % s["dram_bw"],
                            "%.0f" % s["dram_cap"], int(s["overlap"]),
                            "%g" % (s["util"] or 0), s["topo"],
                            "x".join(str(d["size"]) for d in s["dims"] if d["size"] > 0),
                            "/".join("%g" % d["bw"] for d in s["dims"] if d["size"] > 0),
                            s["_order"], int(log.get("TP", 1)), int(log.get("PP", 1)),
                            int(log.get("DP", 1)), s["mb"], s["num_config"], s["_partitions"],
                            s["hidden"],
                            s["heads"], s["head_dim"], s["layers"], s["seq"], s["batch"],
                            repr(log["final_s"]), int(bool(log.get("interrupted")))])
                continue
            w.writerow([rel, st, cls, s["style"].lower(), "train" if s["bwd"] else "forward",
                        int(log.get("TP", 1)), int(log.get("PP", 1)), int(log.get("DP", 1)),
                        "%.6g" % log["final_s"], "%.6g" % step if step else "",
                        "%.4g" % ratio if step else "", "%.6g" % t_step if t_step else "",
                        "%.4g" % (t_step / log["final_s"]) if t_step else "", what, note])
    allr = [r for v in by_study.values() for r in v]
    if not allr:
        print("# no run compared (%d skipped)" % skipped, file=sys.stderr)
        return
    for st in sorted(by_study) + ["all"]:
        v = allr if st == "all" else by_study[st]
        print("# %-22s %3d runs: comet/DFModel %s; with DFModel's simplifications %s"
              % (st, len(v), spread([a for a, _ in v]), spread([b for _, b in v])),
              file=sys.stderr)
    print("# %d runs compared, %d skipped" % (len(allr), skipped), file=sys.stderr)


SUMMARY_COLS = ["dir", "setup_commit", "log_commit", "setup_read", "study", "class",
                "execution", "phase", "chips", "cores", "array_w", "array_h", "freq_ghz",
                "sram_b", "dram_gbps", "dram_cap_b", "overlap", "compute_util", "topo", "dims",
                "link_gbps", "order", "tp", "pp", "dp", "microbatch", "num_config", "partitions",
                "hidden",
                "heads", "head_dim", "layers", "seq", "batch", "dfmodel_s", "interrupted"]


def spread(v):
    v = sorted(x for x in v if x == x)
    if not v:
        return "-"
    q = statistics.quantiles(v, n=10, method="inclusive") if len(v) > 1 else v * 9
    return "median %.3g (p10 %.3g, p90 %.3g, %.3g-%.3g)" % (statistics.median(v), q[0], q[-1],
                                                            v[0], v[-1])


def spatial_chip(study):
    """The RDU studies (SN10: Fig. 19, Table VI; SN30: the DSE's sn30): a chip
    that maps a configuration's kernels onto pattern compute units of their
    own (Prabhakar & Jairath, Hot Chips 33, 2021), comet's gemm mapping
    spatial (docs/FORMATS.md). DFModel states no such property: its setups
    give every chip the same cycle model."""
    return study in ("fig19", "table6") or study.endswith("sn30")


def study_of(rel):
    """The paper's study a run belongs to, from its folder."""
    p = rel.split("/")
    if rel.startswith("LLM/sram_dram"):
        return "fig19"
    if rel.startswith("LLM/dataflow_mapping"):
        return "table6"
    if rel.startswith("LLM/Compare_w_existing/Calculon"):
        return "calculon-a100"
    if rel.startswith("LLM/DSE/system/nonoverlap/") and len(p) > 4:
        return "dse-nonoverlap-" + p[4]
    if rel.startswith("LLM/DSE/system/") and len(p) > 3:
        return "dse-" + p[3]
    return p[1] if len(p) > 1 else p[0]


if __name__ == "__main__":
    main()
