"""python -m greeter NAME [--times N] [--shout]: --shout capitalises, the rest behaves as before."""

from checklib import fail, passed, run_python

CASES = [
    (["Ann"], "Hello, Ann!\n"),
    (["Ann", "--shout"], "HELLO, ANN!\n"),
    (["--shout", "Bo", "--times", "2"], "HELLO, BO!\nHELLO, BO!\n"),
    (["Cy", "--times", "2"], "Hello, Cy!\nHello, Cy!\n"),
]
for args, expected in CASES:
    done = run_python("-m", "greeter", *args)
    if done.returncode != 0 or done.stdout != expected:
        fail(f"python -m greeter {' '.join(args)} printed {(done.stdout + done.stderr)[-300:]!r}, "
             f"expected {expected!r}")
passed()
