from conftest import cli_process, make_repo


def test_make_repo_spreads_events_over_branches(tmp_path):
    from gitmem.memory.api import Memory

    repo = make_repo(tmp_path / "r", events=10, branches=3)
    with Memory.open(repo) as mem:
        assert len(mem.events(all_branches=True)) == 10
        assert len(mem.events(branch="main")) == 4
        assert len(mem.events(branch="b1")) == 3


def test_cli_note_then_log(repo):
    # a real process: the console entry point, its exit code and flushed output
    code, out, err = cli_process(repo, "note", "hello world")
    assert code == 0, err
    code, out, _ = cli_process(repo, "log")
    assert "hello world" in out
