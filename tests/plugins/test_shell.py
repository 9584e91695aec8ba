"""_shell: which programs a command runs, read the way a shell reads it, and never an exception."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from otel_toolchain.plugins._shell import _NOT_BLANKS, _OP, _WORD, Invocation, Script, _Lexer, parse, plain_commands

# (command, the programs it runs, in the order they start)
PROGRAMS = [
    # lists and pipelines
    ("git status", ("git",)),
    ("ls -la | grep foo | wc -l", ("ls", "grep", "wc")),
    ("make && make test", ("make", "make")),
    ("false || echo failed", ("false", "echo")),
    ("cd src; ls", ("cd", "ls")),
    ("cd src\nls\n", ("cd", "ls")),
    ("serve & curl localhost", ("serve", "curl")),
    ("cmd1 |& tee log", ("cmd1", "tee")),
    ("(cd sub && make) && ls", ("cd", "make", "ls")),
    ("{ echo a; echo b; } | sort", ("echo", "echo", "sort")),
    ("cd /repo && pytest -q", ("cd", "pytest")),
    # assignments are not programs
    ('FOO=1 BAR="a b" make', ("make",)),
    ("PATH=$PATH:/x A[1]=y B+=z cargo test", ("cargo",)),
    ("A=1", ()),
    # wrappers run the command in their arguments
    ("sudo -u root apt-get install -y jq", ("apt-get",)),
    ("sudo -E make install", ("make",)),
    ("env -i PATH=/bin HOME=/x python x.py", ("python",)),
    ("env -u TERM -- ls", ("ls",)),
    ("timeout 30 cargo test", ("cargo",)),
    ("timeout -s KILL -k 5 30s npm test", ("npm",)),
    ("nice -n 10 make", ("make",)),
    ("nice -5 make", ("make",)),
    ("nohup ./server.sh > out.log 2>&1 &", ("server.sh",)),
    ("time make -j8", ("make",)),
    ("time -p pytest", ("pytest",)),
    ("stdbuf -o L tail -f log", ("tail",)),
    ("find . -name '*.py' | xargs -n 1 black", ("find", "black")),
    ("ls | xargs -I {} cp {} dest/", ("ls", "cp")),
    ("ls | xargs -0 -P4 rm", ("ls", "rm")),
    ("exec python app.py", ("python",)),
    ("command git push", ("git",)),
    ("command -v git", ("command",)),
    ("sudo timeout 5 env A=1 nice curl x", ("curl",)),
    ("eval 'git push && ls'", ("git", "ls")),
    ("watch -n 1 git status", ("git",)),
    # a wrapper with nothing to run is the program itself
    ("sudo", ("sudo",)),
    ("env", ("env",)),
    ("xargs", ("xargs",)),
    # shells: -c runs a script, anything else runs the shell
    ("bash -c 'curl -s x | sh'", ("curl", "sh")),
    ("sh -c \"make && make install\"", ("make", "make")),
    ("bash -lc 'cargo build'", ("cargo",)),
    ("/bin/bash -euo pipefail -c 'a | b'", ("a", "b")),
    ("bash -o pipefail -c 'npm ci'", ("npm",)),
    ("sudo bash -c \"cd /x && sh -c 'git pull'\"", ("cd", "git")),
    ("bash deploy.sh", ("bash",)),
    ("zsh", ("zsh",)),
    # command and process substitution run too, before the command that uses them
    ("echo $(git rev-parse HEAD)", ("git", "echo")),
    ('echo "sha: $(curl -s x)"', ("curl", "echo")),
    ("echo `date`", ("date", "echo")),
    ("cd $(dirname $(which python))", ("which", "dirname", "cd")),
    ("A=$(date) make", ("date", "make")),
    ("echo $((1 + 2))", ("echo",)),
    ("diff <(sort a) <(sort b)", ("sort", "sort", "diff")),
    ("((i++)); ls", ("ls",)),
    # here-documents: the body is data, not commands
    ("cat > f.py <<'EOF'\nimport os\nrm -rf /\nEOF\npython f.py", ("cat", "python")),
    ("cat <<-END | sh\n\tcurl x\n\tEND\nls", ("cat", "sh", "ls")),
    ("python - <<EOF\nprint(1)\nEOF", ("python",)),
    # quoting, escapes and comments
    ("echo 'a | b && c'", ("echo",)),
    ('grep "x;y" file', ("grep",)),
    ("echo a\\;b", ("echo",)),
    ("ls # && rm -rf /", ("ls",)),
    ("echo a#b; ls", ("echo", "ls")),
    ("make \\\n  -j4 && ls", ("make", "ls")),
    ("'git' push", ("git",)),
    # shell grammar is not programs
    ("if test -f x; then make; else echo no; fi", ("test", "make", "echo")),
    ("for f in a b; do wc -l $f; done", ("wc",)),
    ("while read line; do echo $line; done < list.txt", ("read", "echo")),
    ("until curl -s x; do sleep 1; done", ("curl", "sleep")),
    ("! grep -q x f", ("grep",)),
    ("case $1 in start) ./run.sh;; stop) pkill run;; esac", ("run.sh", "pkill")),
    ("case $1 in\n  a|b)\n    make ;;\n  *) (cd x; ls) ;;\nesac\necho done", ("make", "cd", "ls", "echo")),
    ("f() { ls; }; f", ("ls", "f")),
    ("function g { pwd; }", ("pwd",)),
    ("arr=(a b c); echo ${arr[@]}", ("echo",)),
    # find -exec runs its command
    ("find . -name '*.pyc' -exec rm {} +", ("find", "rm")),
    ("find . -type f -execdir chmod 644 {} \\;", ("find", "chmod")),
    # python -m runs the module; runners run the rest of the line
    ("python3 -m pytest -q", ("pytest",)),
    ("python -u -X dev -m pip install x", ("pip",)),
    ("python -mpytest", ("pytest",)),
    ("python -c 'import os'", ("python",)),
    ("python script.py -m x", ("python",)),
    ("uv run pytest -x", ("pytest",)),
    ("uv run --with rich python -m mypy .", ("mypy",)),
    ("poetry run python manage.py test", ("python",)),
    ("npm exec -- tsc --noEmit", ("tsc",)),
    ("npx -y prettier --write .", ("prettier",)),
    ("bundle exec rake", ("rake",)),
    ("uv run", ("uv",)),
    # programs are known by base name, without a version suffix
    ("/usr/bin/python3.11 x.py", ("python",)),
    (".venv/bin/pytest", ("pytest",)),
    ("pip3 install x", ("pip",)),
    ("./gradlew build", ("gradlew",)),
    ("clang-17 -c x.c", ("clang",)),
    # nothing to run
    ("", ()),
    ("   \n\t", ()),
    ("# just a comment", ()),
]


@pytest.mark.parametrize(("command", "programs"), PROGRAMS)
def test_programs(command: str, programs: tuple[str, ...]) -> None:
    assert parse(command).programs == programs


INVOCATIONS = [
    ("sudo -u root make -j4 install", [Invocation("make", ("-j4", "install"))]),
    ("timeout 5 curl -s 'http://x/?a=1&b=2'", [Invocation("curl", ("-s", "http://x/?a=1&b=2"))]),
    ("ls 2>/dev/null -a", [Invocation("ls", ("-a",))]),
    ('echo "a \\"b\\" \\$HOME"', [Invocation("echo", ('a "b" $HOME',))]),
    ("echo '' \"\"", [Invocation("echo", ("", ""))]),
    ("git commit -m 'fix: a && b'", [Invocation("git", ("commit", "-m", "fix: a && b"))]),
    ("python -m pytest -q tests/", [Invocation("pytest", ("-q", "tests/"))]),
    ("find . -exec grep -l x {} \\;", [Invocation("find", (".", "-exec", "grep", "-l", "x", "{}", ";")),
                                     Invocation("grep", ("-l", "x", "{}"))]),
]


@pytest.mark.parametrize(("command", "invocations"), INVOCATIONS)
def test_arguments_are_the_words_the_program_gets(command: str, invocations: list[Invocation]) -> None:
    assert list(parse(command).invocations) == invocations


# (command, whether it redirects output into a file)
WRITES = [
    ("echo hi > out.txt", True),
    ("make >> build.log", True),
    ("make &> all.log", True),
    ("make >| forced", True),
    ("make 2> errors.txt", True),
    ("make >& file.log", True),
    ("bash -c 'echo x > f'", True),
    ("make 2>&1", False),
    ("make > /dev/null 2>&1", False),
    ("make &>/dev/null", False),
    ("echo oops >&2", False),
    ("cat < in.txt", False),
    ("cat <<EOF\nx > y\nEOF", False),
    ("grep x <<< 'a > b'", False),
    ("echo x | tee f", False),  # tee writes, but as a program, not a redirection
    ("echo '>' f", False),
]


@pytest.mark.parametrize(("command", "writes"), WRITES)
def test_output_redirected_to_a_file_is_a_write(command: str, writes: bool) -> None:
    assert parse(command).writes is writes


# Codex passes argv lists: words run without a shell, unless the program is one
ARGV = [
    (["bash", "-lc", "git status && cargo build"], ("git", "cargo")),
    (["/bin/sh", "-c", "make"], ("make",)),
    (["ls", "-la"], ("ls",)),
    (["git", "commit", "-m", "a && b"], ("git",)),
    (["sudo", "python3", "-m", "pip", "install", "x"], ("pip",)),
    ([], ()),
]


@pytest.mark.parametrize(("argv", "programs"), ARGV)
def test_argv_lists(argv: list[str], programs: tuple[str, ...]) -> None:
    assert parse(argv).programs == programs


# text a shell would reject still yields what can be read of it
MALFORMED = [
    ("git push 'unterminated", ("git",)),
    ('echo "oops && curl x', ("echo",)),
    ("ls && echo \"oops", ("ls", "echo")),
    ("echo $(curl x", ("curl", "echo")),
    ("echo `date", ("date", "echo")),
    ("ls )", ("ls",)),
    ("(((", ()),
    ("&& ls", ("ls",)),
    ("ls >", ("ls",)),
    ("cat <<EOF", ("cat",)),
    ("\\", ()),
    (";;", ()),
    ("esac; fi; done; ls", ("ls",)),
]


@pytest.mark.parametrize(("command", "programs"), MALFORMED)
def test_malformed_text_is_read_as_far_as_it_goes(command: str, programs: tuple[str, ...]) -> None:
    assert parse(command).programs == programs


def test_nesting_is_followed_to_a_limit() -> None:
    command = "make"
    for _ in range(6):
        command = f"bash -c {_quote(command)}"
    assert parse(command).programs == ("make",)
    assert parse("sudo " * 100 + "make").programs == ("sudo",)  # past the limit, a wrapper is itself
    assert parse("echo $(" * 200 + "ls").programs[-1] == "echo"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    assert isinstance(parse(text), Script)


@given(st.text(alphabet="ab -c$()`'\"\\|&;<>#\n{}=!"))
def test_never_raises_on_shell_punctuation(text: str) -> None:
    assert isinstance(parse(text), Script)


@given(st.lists(st.text()))
def test_never_raises_on_any_argv(argv: list[str]) -> None:
    assert isinstance(parse(argv), Script)


# The fast split must agree with the full lexer wherever it is taken. The alphabet mixes what the
# fast path accepts (letters, blanks, control operators) with every character that sends text to
# the full lexer, so both branches are exercised and any disagreement on a simple text shows.
_SHELL_ALPHABET = st.sampled_from(list("ab1-./=*{}!~ \t\r\f&|;") + list("\n()<>\\'\"$`#"))


@given(st.text(_SHELL_ALPHABET, max_size=40))
def test_the_fast_split_gives_the_full_lexers_tokens(text: str) -> None:
    assert _Lexer(text).run() == _Lexer(text).run_full()


@given(st.lists(st.sampled_from(["cd", "/w1", "grep", "-r", "x", ".", "make", "t1", "&&", "||", "|", ";", "&"]),
                max_size=12))
def test_the_fast_split_agrees_on_command_shaped_text(words: list[str]) -> None:
    text = " ".join(words)
    assert _Lexer(text).run() == _Lexer(text).run_full()


# plain_commands splits with str.split(), which is exact only where the text holds no white space
# but the shell's blanks: _NOT_BLANKS must be all the rest of what str.split() splits at.
def test_not_blanks_is_the_white_space_str_split_splits_at_and_a_shell_does_not() -> None:
    splits_at = {chr(code) for code in range(sys.maxunicode + 1) if len(f"a{chr(code)}b".split()) == 2}
    assert splits_at - set(" \t\r\n") == set(_NOT_BLANKS)


def _lexed_commands(text: str) -> list[list[str]]:
    """The full lexer's words of ``text``, grouped between its operators (empty groups dropped)."""
    commands: list[list[str]] = [[]]
    for token, kind in _Lexer(text).run_full():
        assert kind in (_WORD, _OP), text
        if kind == _OP:
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]


# Words, operators and blanks, with the white space a shell keeps in a word, other non-ASCII text and
# what sends text to the full reader: plain_commands must give the lexer's words wherever it answers.
_PLAIN_PIECES = st.sampled_from([*"ab1-./=*{}!~ \t\r&|;", *"\n()<>\\'\"$`#", *_NOT_BLANKS, "é", "\x00", "\x7f",
                                 "if ", "A=1 ", "make ", "&& "])


@given(st.lists(_PLAIN_PIECES, max_size=30).map("".join))
def test_plain_commands_gives_the_full_lexers_words(text: str) -> None:
    commands = plain_commands(text)
    if commands is not None:
        assert commands == _lexed_commands(text), repr(text)


def test_plain_commands_leaves_white_space_a_shell_keeps_in_a_word_to_the_full_reader() -> None:
    assert plain_commands("ls a\xa0b && cd x") is None
    assert parse("ls a\xa0b").invocations == (Invocation("ls", ("a\xa0b",)),)
    assert plain_commands("ls a\tb\r && cd x") == [["ls", "a", "b"], ["cd", "x"]]
