#!/bin/bash
# Train benchmark runs on another machine with more cores, for a fixed time, and pack them for this one.
#
#   OUT=/tmp/out bash benchmarks/train_elsewhere.sh SECONDS JOBS SUITE... [--seeds ...] [--rulesets ...]
#
# Run from a checkout of this repository on that machine. It trains with
# `run_baselines.py SUITE... --jobs JOBS --train-only` (no evaluation there: the rows are recorded here),
# stops after SECONDS (set-up included), parks every run (the trained ones with their policy, the others with
# their latest checkpoint) and packs results/benchmark/parked into $OUT/back.tgz.partNN (15 MB pieces).
# Back here: `cat back.tgz.part* | tar xzf -` in the checkout, then `run_baselines.py SUITE...` evaluates
# and records the trained runs and resumes the others (docs/benchmark.md, "Status of the baselines").
# A machine without a package index: put the wheels it lacks (gymnasium, farama-notifications, omegaconf,
# antlr4-python3-runtime, pettingzoo) in .whl/; they are installed into /tmp/site first. PY picks the
# interpreter (default python3).
set -u
BUDGET=$1; JOBS=$2; shift 2
T0=$SECONDS
PY=${PY:-python3}
: "${OUT:?set OUT to the folder the packed runs go to}"
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
$PY -c "import gymnasium, omegaconf, pettingzoo, torch, numpy, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'numpy', numpy.__version__, 'gymnasium', gymnasium.__version__)" || exit 4
echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
# the solver's tables, once, before the runs ask for them (each training run reads the optimal score)
for r in yacht school_poker yahtzee yatzy dice_poker; do
  $PY -c "from agents.evaluation.benchmark import load_solution; from dice_poker_env.rules import load_rules; print('$r', load_solution(load_rules('$r'), required=True).expected_score)" &
done
wait
echo "set up in $((SECONDS - T0)) s"
SETSID=$(command -v setsid || true)
$SETSID $PY benchmarks/run_baselines.py "$@" --jobs "$JOBS" --train-only > "$OUT/driver.log" 2>&1 &
PID=$!
END=$((T0 + BUDGET))
while kill -0 $PID 2>/dev/null && [ $SECONDS -lt $END ]; do sleep 2; done
kill -TERM -- -$PID 2>/dev/null || pkill -TERM -f 'train.py|run_baselines'; sleep 3
kill -KILL -- -$PID 2>/dev/null || pkill -KILL -f 'train.py|run_baselines'; sleep 1
$PY benchmarks/run_baselines.py --park >> "$OUT/driver.log" 2>&1
echo "parked: $(find results/benchmark/parked -name 'final_model.*' | wc -l) trained, $(find results/benchmark/parked -name '*.pt' | wc -l) part-trained"
tar czf /tmp/back.tgz results/benchmark/parked
split -b 15M -d /tmp/back.tgz "$OUT/back.tgz.part"
ls -la "$OUT"; echo "done in $((SECONDS - T0)) s"
