"""abc_tf.runs.run_lock: one writer per run directory. A flock belongs to an open file, so a
second open in this process is refused like a second process would be. The commands' messages:
tests/test_train.py and tests/test_evaluate.py."""

import json
import os
import socket
import warnings

import pytest

from abc_tf.runs import run_lock


def test_a_held_lock_refuses_a_second_writer_naming_the_holder(tmp_path):
    run_dir = str(tmp_path / "run")
    with run_lock.RunLock(run_dir, command="train.py"):
        holder = json.loads((tmp_path / "run" / ".lock").read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        in_use = (
            f"run directory {run_dir} is in use by train.py "
            f"(pid {os.getpid()} on host {socket.gethostname()}, since "
        )
        with pytest.raises(
            run_lock.RunDirInUse, match=r"\(pid .*; wait for it to finish or use another --output_dir\.$"
        ) as refused:
            run_lock.RunLock(run_dir)
        assert str(refused.value).startswith(in_use)
        with pytest.raises(run_lock.RunDirInUse, match="; evaluate later.$") as probed:
            run_lock.check_free(run_dir, advice="evaluate later")
        assert str(probed.value).startswith(in_use)
    # Released cleanly: the file stays (deleting it would let two writers lock two files), empty.
    assert (tmp_path / "run" / ".lock").read_text() == ""
    run_lock.check_free(run_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an emptied lock file was released, not left by a dead holder
        run_lock.RunLock(run_dir).release()


def test_the_probe_writes_nothing(tmp_path):
    run_lock.check_free(str(tmp_path / "new"))
    assert not (tmp_path / "new").exists()


def test_a_lock_left_by_a_dead_process_is_taken_over_with_a_warning(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # What a SIGKILLed train.py leaves: its JSON, and no flock (the kernel dropped it).
    (run_dir / ".lock").write_text(
        json.dumps(
            {"command": "train.py", "pid": 4321, "host": "node7", "since": "2026-01-02T03:04:05+00:00"}
        )
    )
    with pytest.warns(
        UserWarning,
        match=r"\.lock was left by train.py \(pid 4321 on host node7, since 2026-01-02T03:04:05\+00:00\), "
        "which no longer runs; taking the run directory over",
    ):
        lock = run_lock.RunLock(str(run_dir), command="train.py")
    with lock:
        assert json.loads((run_dir / ".lock").read_text())["pid"] == os.getpid()


def test_a_lock_file_not_written_yet_still_refuses(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # The holder has taken the flock but not yet written its name.
    descriptor = os.open(run_dir / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        run_lock.fcntl.flock(descriptor, run_lock.fcntl.LOCK_EX)
        with pytest.raises(
            run_lock.RunDirInUse, match="in use by another process \\(its lock file does not say which\\)"
        ):
            run_lock.check_free(str(run_dir))
    finally:
        os.close(descriptor)
