#!/usr/bin/env python3
"""comet beside Calculon (Isaev et al., SC'23), term by term.

Runs a Calculon checkout the user gives (github.com/calculon-ai/calculon; it
needs numpy, pandas and psutil in the Python that runs it) and this build's
comet on the same configurations, and prints each breakdown term and the
memory per chip of both with their ratio (CSV on stdout or --out).

    scripts/calculon-compare.py --calculon ~/src/calculon [--comet build/comet]
        [--python python3] [--out terms.csv] [--summary] [--published]

--summary prints Calculon's side alone in the format of
docs/validation/calculon-terms.csv (what tests/system/test_published.c reads).
Nothing of Calculon is copied or built here: its own command line runs on its
own files (models/, systems/, validation/seqsel/tab5/) and on execution files
this script writes from the configurations below.

The configurations: Korthikanti et al. 2022's Table 5 (Calculon's own
validation files), and GPT-3 175B / Megatron 1T at data parallelism, a
pipeline whose stride is under a node (tp 4), and H100 (Calculon's
h100_80g_nvl8 system beside comet's dgx-h100). Calculon has no LM head and
no embedding: comet runs the same models with vocab 0.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

# id, Calculon model, system (Calculon file, comet preset), GPUs, batch,
# tp, pp, dp, microbatch, interleave, recompute (comet name), seq_parallel
CONFIGS = [
    ("k22-22b-full", "megatron-22B", "a100", 8, 4, 8, 1, 1, 4, 1, "full", 0),
    ("k22-22b-sel", "megatron-22B", "a100", 8, 4, 8, 1, 1, 4, 1, "selective", 1),
    ("k22-175b-full", "gpt3-175B", "a100", 64, 64, 8, 8, 1, 1, 3, "full", 0),
    ("k22-175b-sel", "gpt3-175B", "a100", 64, 64, 8, 8, 1, 1, 3, "selective", 1),
    ("k22-530b-full", "turing-530B", "a100", 280, 280, 8, 35, 1, 1, 3, "full", 0),
    ("k22-530b-sel", "turing-530B", "a100", 280, 280, 8, 35, 1, 1, 3, "selective", 1),
    ("k22-1t-full", "megatron-1T", "a100", 512, 512, 8, 64, 1, 1, 1, "full", 0),
    ("k22-1t-sel", "megatron-1T", "a100", 512, 512, 8, 64, 1, 1, 1, "selective", 1),
    ("175b-dp8-sel", "gpt3-175B", "a100", 512, 512, 8, 8, 8, 1, 3, "selective", 1),
    ("175b-tp4-pp16-sel", "gpt3-175B", "a100", 64, 64, 4, 16, 1, 1, 1, "selective", 1),
    ("1t-dp8-sel", "megatron-1T", "a100", 4096, 4096, 8, 64, 8, 1, 1, "selective", 1),
    ("175b-h100-sel", "gpt3-175B", "h100", 64, 64, 8, 8, 1, 1, 3, "selective", 1),
    ("175b-h100-dp8-full", "gpt3-175B", "h100", 512, 1536, 8, 8, 8, 1, 3, "full", 0),
]
# --published: the MT-NLG runs (Smith et al. 2022, Sec. 2.4: ZeRO-1 data
# parallelism, DeepSpeed's pipeline engine, gradients accumulated by a kernel
# of their own) and N21's 530B row (Megatron-LM of 2021) beside them; comet on
# dgx-a100 (Calculon has no 40 GB A100 system), microbatch 1 (comet's best for
# the unstated microbatch), docs/validation-published.md quotes the result.
# The same 12 fields, then ZeRO stage and pipeline engine.
PUBLISHED = [
    ("s22-530b-280", "turing-530B", "a100", 2240, 1920, 8, 35, 8, 1, 1, "full", 0, 1, "deepspeed"),
    ("s22-530b-350", "turing-530B", "a100", 2800, 1920, 8, 35, 10, 1, 1, "full", 0, 1, "deepspeed"),
    ("s22-530b-420", "turing-530B", "a100", 3360, 1920, 8, 35, 12, 1, 1, "full", 0, 1, "deepspeed"),
    ("n21-529.6b", "turing-530B", "a100", 2520, 2520, 8, 35, 9, 1, 1, "full", 0, 0, "megatron"),
]
SYSTEMS = {"a100": ("systems/a100_80g.json", "dgx-a100"),
           "h100": ("systems/h100_80g_nvl8.json", "dgx-h100")}
TERMS = ["compute_memory", "recompute", "tp", "pp", "dp", "bubble", "optimizer", "step",
         "memory_per_chip"]


def calculon_exe(c):
    _, _, _, n, batch, tp, pp, dp, mb, v, rec, sp = c[:12]
    zero = c[12] if len(c) > 12 else 0
    return {
        "num_procs": n, "tensor_par": tp, "pipeline_par": pp, "data_par": dp,
        # a parallelism inside the NVLink domain (8 GPUs) only when it and
        # those inside it fit there, as Calculon's own files place them
        "tensor_par_net": 0 if tp <= 8 else 1,
        "pipeline_par_net": 0 if tp * pp <= 8 else 1,
        "data_par_net": 0 if tp * pp * dp <= 8 else 1,
        "batch_size": batch, "microbatch_size": mb, "datatype": "float16",
        "fused_activation": False, "attention_type": "multihead",
        "activation_recompute": {"full": "full", "selective": "attn_only",
                                 "none": "none"}[rec],
        "pipeline_interleaving": v, "optimizer_sharding": zero >= 1,
        "tensor_par_comm_type": "rs_ag" if sp else "ar", "tensor_par_overlap": "none",
        "seq_par_ag_redo": bool(sp), "data_par_overlap": False, "weight_offload": False,
        "activations_offload": False, "optimizer_offload": False, "training": True,
    }


def run_calculon(args, c, tmp):
    cid, model, sysname = c[0], c[1], c[2]
    tab5 = os.path.join(args.calculon, "validation/seqsel/tab5",
                        "%s_%s.json" % (model, "full" if c[10] == "full" else "seqsel"))
    exe = os.path.join(tmp, cid + ".exe.json")
    if cid.startswith("k22-") and os.path.exists(tab5):
        exe = tab5  # Calculon's own validation file
    else:
        with open(exe, "w") as f:
            json.dump(calculon_exe(c), f)
    out = os.path.join(tmp, cid + ".calculon.json")
    env = dict(os.environ, PYTHONPATH=args.calculon)
    subprocess.run([args.python, os.path.join(args.calculon, "bin/calculon"), "llm",
                    os.path.join(args.calculon, "models", model + ".json"), exe,
                    os.path.join(args.calculon, SYSTEMS[sysname][0]), out],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    with open(out) as f:
        d = json.load(f)
    return {
        "compute_memory": d["fw_time"] + d["bw_time"],
        "recompute": d["recompute_time"],
        "tp": d["tp_comm_exposed_time"] + d["recomm_exposed_time"],
        "pp": d["pp_comm_exposed_time"], "dp": d["dp_comm_exposed_time"],
        "bubble": d["bubble_time"], "optimizer": d["optim_step_time"],
        "step": d["total_time"], "memory_per_chip": d["proc_mem_tier1_cap_req"],
    }


def run_comet(args, c, tmp):
    cid, model, sysname, n, batch, tp, pp, dp, mb, v, rec, sp = c[:12]
    zero, engine = (c[12], c[13]) if len(c) > 12 else (0, "megatron")
    with open(os.path.join(args.calculon, "models", model + ".json")) as f:
        mj = json.load(f)
    wl = os.path.join(tmp, cid + ".yaml")
    with open(wl, "w") as f:
        f.write("schema: comet.llm.v1\nname: %s\nhidden: %d\nheads: %d\nhead_dim: %d\n"
                "ffn: %d\nlayers: %d\nseq: %d\nvocab: 0\nglobal_batch: %d\ndtype: fp16\n"
                % (model, mj["hidden"], mj["attn_heads"], mj["attn_size"], mj["feedforward"],
                   mj["num_blocks"], mj["seq_size"], batch))
    cmd = [args.comet, "predict", "--hw", SYSTEMS[sysname][1], "--chips", str(n),
           "--workload", wl, "--batch", str(batch), "--parallel",
           "tp=%d,pp=%d,dp=%d,microbatch=%d,interleave=%d,order=tp-dp-pp,zero=%d"
           % (tp, pp, dp, mb, v, zero),
           "--recompute", rec, "--seq-parallel" if sp else "--no-seq-parallel",
           "--execution", "kernel", "--json", "-q"]
    if len(c) > 12:  # the published runs' software: DeepSpeed's engine or 2021 Megatron-LM
        cmd += ["--pipe-engine", engine, "--grad-acc-kernel"]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    b = r["breakdown_s"]
    return {
        "compute_memory": b["compute"] + b["memory"], "recompute": b["recompute"],
        "tp": b["tp_network"], "pp": b["pp_network"], "dp": b["dp_network"],
        "bubble": b["bubble"], "optimizer": b["optimizer"], "step": r["step_s"],
        "memory_per_chip": r["memory_per_chip_bytes"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calculon", required=True, help="a Calculon checkout")
    ap.add_argument("--comet", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "comet"))
    ap.add_argument("--python", default="python3", help="the Python that runs Calculon")
    ap.add_argument("--out", help="CSV file (default: stdout)")
    ap.add_argument("--published", action="store_true",
                    help="the MT-NLG runs and N21's 530B row instead of the configurations above")
    ap.add_argument("--summary", action="store_true",
                    help="Calculon's side only, as docs/validation/calculon-terms.csv")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in (PUBLISHED if args.published else CONFIGS):
            cal = run_calculon(args, c, tmp)
            if args.summary:
                with open(os.path.join(args.calculon, "models", c[1] + ".json")) as f:
                    mj = json.load(f)
                rows.append([c[0], SYSTEMS[c[2]][1], c[3], c[4], mj["hidden"], mj["attn_heads"],
                             mj["attn_size"], mj["feedforward"], mj["num_blocks"],
                             mj["seq_size"]] + list(c[5:]) + ["%.6g" % cal[t] for t in TERMS])
                continue
            com = run_comet(args, c, tmp)
            for t in TERMS:
                ratio = com[t] / cal[t] if cal[t] > 0 else float("nan")
                rows.append([c[0], t, "%.6g" % cal[t], "%.6g" % com[t], "%.4g" % ratio])
    f = open(args.out, "w", newline="") if args.out else sys.stdout
    w = csv.writer(f)
    w.writerow(["id", "system", "gpus", "batch", "hidden", "heads", "head_dim", "ffn", "layers",
                "seq", "tp", "pp", "dp", "microbatch", "interleave", "recompute",
                "seq_parallel"] + TERMS if args.summary
               else ["id", "term", "calculon", "comet", "comet_over_calculon"])
    w.writerows(rows)
    if args.out:
        f.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
