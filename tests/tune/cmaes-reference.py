#!/usr/bin/python3
"""sedp tests — the reference runs for core/tune/cmaes.c: Debian's python3-cmaes (cmaes.CMA,
ask/tell) on the sphere (n = 5, started at 2.5 in every coordinate) and on Rosenbrock's function
(n = 4, started at the centre), both in [-5, 5]^n, with sigma 0.3 of the range (3.0), the
default population, at most 10 resamplings
of a candidate outside the box (then clipped, as sedp does), for seeds 1 to 9. Prints one line per
function:

    RESULT function=NAME n=N target=T budget=B median_evaluations=E

where E is the median over the seeds of the evaluations (whole generations) until the best value
seen fell below T (B + 1 when it did not within B). Exits 1 (with
the reason on standard error) when the cmaes module cannot be imported: the C test fails then,
it does not skip."""
import statistics
import sys

try:
    import numpy as np
    import cmaes
except ImportError as e:
    sys.exit(f"cmaes-reference.py: cannot import the cmaes module ({e}); "
             "install Debian's python3-cmaes (scripts/debian-packages.txt)")

LOWER, UPPER = -5.0, 5.0
SIGMA0 = 0.3
SEEDS = range(1, 10)


def sphere(x):
    return float(np.sum(x * x))


def rosenbrock(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def evaluations_to(fun, n, x0, target, budget, seed):
    """Evaluations of one cmaes.CMA run from @x0 until its best value is below @target (whole
    generations), or @budget + 1."""
    bounds = np.array([[LOWER, UPPER]] * n)
    es = cmaes.CMA(mean=np.full(n, x0), sigma=SIGMA0 * (UPPER - LOWER),
                   bounds=bounds, n_max_resampling=10, seed=seed)
    best, used = float("inf"), 0
    while used + es.population_size <= budget:
        told = []
        for _ in range(es.population_size):
            x = es.ask()
            told.append((x, fun(x)))
            best = min(best, told[-1][1])
        used += len(told)
        es.tell(told)
        if best < target:
            return used
    return budget + 1


def main():
    for name, fun, n, x0, target, budget in (("sphere", sphere, 5, 2.5, 1e-8, 3000),
                                             ("rosenbrock", rosenbrock, 4, 0.0, 1e-6, 20000)):
        used = [evaluations_to(fun, n, x0, target, budget, seed) for seed in SEEDS]
        print(f"RESULT function={name} n={n} target={target:g} budget={budget} "
              f"median_evaluations={statistics.median(used):g}")
        print(f"# {name}: " + " ".join(str(u) for u in used), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
