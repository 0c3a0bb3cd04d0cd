"""yardstick's profiler contract for PyTorch: one object that a training loop calls once per
step and around its phases, which does nothing unless yardstick asked for a profile.

yardstick sets, for the profiled replicate only (never for a measured one):

    YARDSTICK_PROFILE            trace (Chrome/Perfetto JSON) or tb (TensorBoard plugin files)
    YARDSTICK_PROFILE_DIR        where to write the traces
    YARDSTICK_PROFILE_SCHEDULE   wait,warmup,active,repeat (torch.profiler.schedule)

Use:

    from yardstick_profile import Profiler
    prof = Profiler()                   # reads the variables; inert when they are unset
    for step in range(steps):
        with prof.phase("data"):
            batch = next(loader)
        with prof.phase("forward"):
            loss = model(batch)
        with prof.phase("backward"):
            loss.backward()
        with prof.phase("optimizer"):
            opt.step()
        prof.step()                     # marks the end of a step (ProfilerStep#N)
    prof.close()

The phase names are the metric protocol's: `data`, `forward`, `backward`, `optimizer` (and
`communication` for an explicit collective); each becomes a `record_function` range that
yardstick's trace reader attributes every operator to. Importable from a checkout
(`sys.path.insert(0, "<repo>/python")`) or installed with `pip install <repo>/python`.
"""

import contextlib
import os

__all__ = ["Profiler", "PHASES"]

PHASES = ("data", "forward", "backward", "optimizer", "communication")


def _schedule(text):
    parts = [int(x) for x in text.split(",")]
    if len(parts) != 4 or min(parts) < 0 or parts[2] < 1:
        raise ValueError(
            f"YARDSTICK_PROFILE_SCHEDULE={text!r}: expected wait,warmup,active,repeat "
            "with active >= 1"
        )
    return parts


class Profiler:
    """torch.profiler with yardstick's schedule and output, or nothing at all."""

    def __init__(self, env=None):
        env = os.environ if env is None else env
        self.mode = env.get("YARDSTICK_PROFILE", "off")
        self.dir = env.get("YARDSTICK_PROFILE_DIR")
        self._prof = None
        self._record = None
        if self.mode in ("", "off") or not self.dir:
            self.mode = "off"
            return
        if self.mode not in ("trace", "tb"):
            raise ValueError(f"YARDSTICK_PROFILE={self.mode!r}: expected trace or tb")
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function, schedule

        os.makedirs(self.dir, exist_ok=True)
        wait, warmup, active, repeat = _schedule(
            env.get("YARDSTICK_PROFILE_SCHEDULE", "1,1,3,1")
        )
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        rank = env.get("RANK", "0")
        if self.mode == "tb":
            handler = torch.profiler.tensorboard_trace_handler(
                self.dir, worker_name=f"rank{rank}"
            )
        else:
            out = self.dir

            def handler(p):
                p.export_chrome_trace(
                    os.path.join(out, f"rank{rank}.step{p.step_num}.pt.trace.json")
                )

        self._record = record_function
        self._prof = profile(
            activities=activities,
            schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=repeat),
            on_trace_ready=handler,
            record_shapes=False,
            with_stack=False,
        )
        self._prof.__enter__()

    @property
    def enabled(self):
        return self._prof is not None

    def phase(self, name):
        """A `record_function(name)` range while profiling, else a no-op."""
        if self._prof is None:
            return contextlib.nullcontext()
        return self._record(name)

    def step(self):
        """Ends a step: the profiler's schedule advances (ProfilerStep#N in the trace)."""
        if self._prof is not None:
            self._prof.step()

    def close(self):
        """Stops profiling and writes any trace still pending."""
        if self._prof is not None:
            self._prof.__exit__(None, None, None)
            self._prof = None
