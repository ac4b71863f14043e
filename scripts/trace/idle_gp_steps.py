# SPDX-License-Identifier: MIT
# gdb script (idle_gp_steps.sh): single-step from the first marker() return
# to the second marker() call and write "function instruction" per step.
import gdb

gdb.execute("set pagination off")
gdb.execute("break marker")
gdb.execute("run", to_string=True)
gdb.execute("finish", to_string=True)
out = open(gdb.parameter("logging file") or "steps.txt", "w")
for _ in range(200000):
    name = gdb.selected_frame().name() or "?"
    if name == "marker":
        break
    out.write(name + " " + gdb.execute("x/i $pc", to_string=True).strip() + "\n")
    gdb.execute("stepi", to_string=True)
out.close()
gdb.execute("kill")
