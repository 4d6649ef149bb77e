"""report.py on an unseen CSV prints each user as `Name (age) <email>`: the email goes from the
file through load_users and User to describe()."""

from checklib import WORK, fail, passed, run_python

(WORK / "unseen.csv").write_text("name,age,email\nCy,41,cy@mail.test\nDee,19,dee@x.test\n")
done = run_python("report.py", "unseen.csv")
expected = "Cy (41) <cy@mail.test>\nDee (19) <dee@x.test>\n"
if done.returncode != 0 or done.stdout != expected:
    fail(f"python report.py unseen.csv printed {(done.stdout + done.stderr)[-400:]!r}, "
         f"expected {expected!r}")
passed()
