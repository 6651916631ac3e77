"""Grade a whole class: ``python -m agents.commands.grade SUBMISSIONS_DIR --rules yahtzee --out DIR``.

:func:`grade_class` grades every submission of a class on the same games, as
:func:`agents.course.grader.grade` grades one, with two savings:

* the reference agents' games (optimal and greedy, with their exact regret) are played
  **once** for the class (:func:`agents.course.grader.reference_games`) and given to every
  student's grade, which then plays only the submission; each report is the one a single
  grade writes, byte for byte;
* the submissions are graded **in parallel**, ``jobs`` at a time (worker processes of the
  grader, each loading the solver's solution once); each submission still runs in its own
  isolated sandbox with every limit of the single grade (:mod:`agents.course.sandbox`). The time
  limits are wall-clock time, which a classmate's busy processes graded alongside can eat into: a
  student whose grade has time limit failures (:data:`TIMED`) is graded again alone at the end, and
  that grade, which its report says is the second, counts.

A submission is one Python file: a class folder holds one per student, or one folder per student (a learning
platform's export, the student named after the folder); :func:`find_class` names every other file, not graded,
and tells files of one name apart by their folders. :func:`find_submissions` finds its agent class without
running it (the file is parsed, never imported, in the grader): the one top-level class
with an ``act`` method, or the class named by ``class_name``. A file where there is no
such class, or more than one, is recorded as a failure of that student (status
``no_agent``) and grading goes on; so does a submission that does not load, crashes, hangs
or plays illegally (its report says so). Nothing a submission does stops the class.

The outputs (:mod:`agents.course.gradebook`): per student ``DIR/<student>/report.json``,
``report.md``, ``report.html`` (today's report) and Gradescope's ``results.json``; for the
class ``DIR/gradebook.csv``, ``DIR/index.html`` (the class page) and ``DIR/class.json``.
The points come from a rubric (:mod:`agents.course.rubric`).

Size: one class grade (finding the submissions, their names and agent classes, staging, grading in parallel with
its interruption, the flags and similar pairs a gradebook shows); the files are :mod:`agents.course.gradebook`'s,
the similarity measure :mod:`agents.course.similarity`'s.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.course.grade_report import summary_text_line
from agents.course.grader import Baselines, grade, protect_process, reference_games, write_report
from agents.course.rubric import Earned, Rubric, score_report
from agents.course.sandbox import Limits
from agents.course.similarity import DEFAULT_SHARE, SimilarPair, python_source, read_sources, similar_pairs
from agents.evaluation.benchmark import Z95, load_solution
from dice_poker_env.rules import Rules, load_rules

#: a student's folder name: these characters only (others become ``_``)
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
#: the report's fields a gradebook row keeps (everything but the replays)
_DROPPED = ("replays",)


@dataclass(frozen=True)
class Submission:
    """One student's submission.

    Attributes:
        student: the student's name as given (the file's stem, or the folder's that names the student), shown
            escaped.
        folder: the student's folder under ``DIR`` (only ``A-Z a-z 0-9 . _ -``, unique in the class).
        path: the submitted file.
        spec: the agent spec graded (``FILE.py:NAME``), or ``None`` when no agent class was found.
        problem: why no agent class was found (with ``spec`` ``None``).
        file: the file as the gradebook names it: its name, or ``folder/name`` where its folder names the
            student (:func:`find_class`); empty: the file's name.
    """

    student: str
    folder: str
    path: str
    spec: str | None
    problem: str | None = None
    file: str = ""


@dataclass(frozen=True)
class Skipped:
    """A file or folder of a class folder that is not graded, and why (``not graded: ...``)."""

    path: str
    why: str


#: a class's statuses that are no grade: not reached before an interrupt, cut short by it (the report's ``partial``
#: with ``"interrupted": true``), the grader's own failure (``error``: no fault of the student's); the gradebook's
#: points are blank and there is no ``results.json``
NO_GRADE = ("not_graded", "interrupted", "error")


@dataclass
class StudentResult:
    """A graded student: the report (without its replays), the rubric's points, where the files are."""

    submission: Submission
    status: str
    report: dict[str, Any] | None
    earned: list[Earned] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def graded(self) -> bool:
        """Whether the points are a grade: not for a student left ungraded, cut short by an interrupt or failed by
        the grader (:data:`NO_GRADE`)."""
        return self.status not in NO_GRADE and not (self.report or {}).get("interrupted")


@dataclass
class ClassResult:
    """What :func:`grade_class` returns; :mod:`agents.course.gradebook` writes it."""

    rules: Rules
    games: int
    seed: int
    limits: Limits
    isolated: bool
    solver: str
    jobs: int
    rubric: Rubric | None
    baselines: Baselines
    optimal_expected_score: float
    students: list[StudentResult]
    interrupted: bool = False
    seconds: float = 0.0
    similar: list[SimilarPair] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


#: the files the class writes in its output folder besides the students' folders (:mod:`agents.course.gradebook`)
CLASS_FILES = ("gradebook.csv", "index.html", "class.json")


# ------------------------------------------------------------------ finding the submissions
def agent_classes(tree: ast.Module) -> list[str]:
    """The top-level classes of a parsed Python source that have an ``act`` method, their own or inherited from another
    class of the same file, less the bases whose ``act`` a derived class inherits: ``class Base`` with ``act``
    and ``class MyAgent(Base)`` without one give ``MyAgent``; a derived class with its own ``act`` leaves both
    (the instructor chooses). The source is parsed, never run.
    """
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    bases = {
        name: [base.id for base in node.bases if isinstance(base, ast.Name) and base.id in classes]
        for name, node in classes.items()
    }

    def own_act(name: str) -> bool:
        return any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "act"
            for item in classes[name].body
        )

    # a class has an act if it or a base (of the file) has one: from the classes with their own, down to the classes
    # derived from them, each class once (a chain of 3,000 or a lattice of bases: linear, no recursion)
    derived: dict[str, list[str]] = {name: [] for name in classes}
    for name, of in bases.items():
        for base in of:
            derived[base].append(name)
    with_act = {name for name in classes if own_act(name)}
    todo = list(with_act)
    while todo:
        for child in derived[todo.pop()]:
            if child not in with_act:
                with_act.add(child)
                todo.append(child)
    agents = [name for name in classes if name in with_act]
    # a class whose act a derived class uses as it is (not overriding it) is that class's base, not an agent
    inherited = {base for name in agents if not own_act(name) for base in bases[name]}
    return [name for name in agents if name not in inherited]


#: the most other files beside a submission that :func:`beside_other_agents` reads (beyond: a class's folder)
BESIDE_MOST = 200


def beside_other_agents(path: str | os.PathLike) -> bool:
    """Whether another ``*.py`` file beside a submission's file has an agent class (a class with an ``act`` method;
    parsed, never run), or there are more than :data:`BESIDE_MOST` of them: its folder is then a class's (the
    students' files side by side), not its author's own, so a failure's message names no file beside it
    (``own_folder`` of :class:`agents.course.sandbox.SandboxedAgent`: the submission would learn which classmates'
    files are there)."""
    own = Path(path).resolve()
    try:
        others = [p for p in own.parent.iterdir() if p.suffix == ".py" and p.name != own.name]
    except OSError:
        return True
    if len(others) > BESIDE_MOST:
        return True
    return any(tree is not None and agent_classes(tree) for tree in map(_parsed, others))


def _parsed(path: Path) -> ast.Module | None:
    """A Python file's syntax tree (parsed, never run); ``None`` where it cannot be read or parsed."""
    try:
        return ast.parse(python_source(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def syntax_problem(error: SyntaxError) -> str:
    """Why a file that does not parse has no agent class: ``SyntaxError: invalid syntax (line 3): it does not
    parse, ...`` (class grading, and a single grade's and a tournament's check of a bare file)."""
    where = f" (line {error.lineno})" if error.lineno else ""
    return f"{type(error).__name__}: {error.msg}{where}: it does not parse, so no agent class can be found in it"


def find_agent_class(path: str | os.PathLike, class_name: str | None = None) -> tuple[str | None, str | None]:
    """``(class, None)`` for the agent class of one file, or ``(None, why)`` (module docstring).

    With ``class_name`` that class is graded whatever it holds (a missing one is the submission's load
    failure, as in a single grade); without it, the one top-level class with an ``act`` method. A file
    that does not parse has no agent class (its syntax error is the reason), unless ``class_name`` names
    one: it is then graded, its report showing the error as a load failure.
    """
    name = os.path.basename(path)
    try:
        source = python_source(path)
    except OSError as error:
        return None, f"cannot read {name}: {error.strerror or error}"
    if class_name is not None:
        return class_name, None
    try:
        tree = ast.parse(source)
    except SyntaxError as error:  # no class can be named (graded as FILE.py:Agent, it showed a class made up)
        return None, syntax_problem(error)
    except (ValueError, RecursionError, MemoryError):  # the parser's limits, not the file's: graded, its report says
        return "Agent", None
    classes = agent_classes(tree)
    if len(classes) == 1:
        return classes[0], None
    if not classes:
        inheriting = [node.name for node in tree.body if isinstance(node, ast.ClassDef) and node.bases]
        maybe = f" ({', '.join(inheriting)} may inherit one from outside the file)" if inheriting else ""
        return None, (
            f"no class with an act method in {name}{maybe}; name the agent's class (FILE.py:NAME, or --class NAME of "
            "dice-poker grade and tournament)"
        )
    return None, (
        f"{len(classes)} classes with an act method in {name} ({', '.join(classes)}); choose one (FILE.py:NAME, or --class NAME of "
        "dice-poker grade and tournament)"
    )


def _folders(students: Sequence[str]) -> list[str]:
    """The students' folders under the output folder, in order: safe characters only, unique (case-insensitively),
    never a class file's name (a student ``gradebook.csv.py`` gets ``gradebook.csv-2``). A student whose name is a
    safe folder name as it is gets that folder first: a name made safe (``alice `` as ``alice_``) never takes
    another student's own name."""
    taken = {name.lower() for name in CLASS_FILES}
    folders: list[str | None] = [None] * len(students)
    for i, name in enumerate(students):
        if name and not _SAFE.search(name) and name.strip(".") == name and name.lower() not in taken:
            folders[i] = name
            taken.add(name.lower())
    for i, name in enumerate(students):
        if folders[i] is None:
            base = _SAFE.sub("_", name).strip(".") or "student"
            folder, n = base, 2
            while folder.lower() in taken:
                folder, n = f"{base}-{n}", n + 1
            taken.add(folder.lower())
            folders[i] = folder
    return [folder for folder in folders if folder is not None]


def _is_python(path: Path) -> bool:
    """A student's file: its name ends in ``.py`` (a symbolic link too: it is the student's problem)."""
    return path.suffix == ".py" and (path.is_file() or path.is_symlink())


def _not_graded(path: Path) -> Skipped:
    """Why an entry of a class folder that is not a ``*.py`` file is not graded."""
    if path.is_dir():
        why = "a folder without *.py files"
    elif path.suffix.lower() == ".py":  # (a case-insensitive file system could not hold alice.py beside it)
        why = f"its name ends in {path.suffix}, not .py: rename it {path.stem}.py to grade it"
    else:
        why = "not a .py file"
    return Skipped(str(path), f"not graded: {why}")


def _listed(paths: Sequence[Path], most: int = 3) -> str:
    names = [p.name for p in paths]
    return ", ".join(names[:most]) + (" ..." if len(names) > most else "")


def _link(path: Path) -> str:
    return f"{path.name} is a symbolic link, not followed: hand in the file itself"


def _defines(path: Path, class_name: str | None) -> bool:
    """Whether a file defines the class ``class_name`` at its top level (without: one agent class); parsed, never
    run."""
    tree = _parsed(path)
    if tree is None:
        return False
    if class_name is None:
        return len(agent_classes(tree)) == 1
    return any(isinstance(node, ast.ClassDef) and node.name == class_name for node in tree.body)


#: a submission found in a folder: its path, the student's name when a folder gives it, why it is not graded
_Found = tuple[str, str | None, str | None]


def _student_folder(folder: Path, class_name: str | None) -> tuple[_Found, list[Skipped]]:
    """One student's folder of a learning platform's export: its one ``*.py`` file, or the one of several that
    holds the agent class (``class_name``, or the one class with an ``act`` method); the student's name is the
    folder's."""
    student = folder.name
    if folder.is_symlink():
        return (str(folder), student, f"{student} is a symbolic link, not followed: hand in the files themselves"), []
    children = sorted(folder.iterdir())
    files = [p for p in children if _is_python(p)]
    skipped = [
        Skipped(str(p), "not graded: a folder in a student's folder (only the files beside it are read)")
        if p.is_dir()
        else _not_graded(p)
        for p in children
        if p not in files and p.name != "__pycache__"
    ]
    if len(files) > 1:
        chosen = [p for p in files if not p.is_symlink() and _defines(p, class_name)]
        if len(chosen) == 1:
            why = f"not graded: {student}'s agent is in {chosen[0].name}"
            return (str(chosen[0]), student, None), skipped + [Skipped(str(p), why) for p in files if p != chosen[0]]
        agent = f"the class {class_name}" if class_name else "one agent class"
        return (
            str(folder),
            student,
            f"{len(files)} *.py files in {student}/ ({_listed(files)}), {len(chosen) or 'none'} of them with {agent}: "
            "hand in one file" + ("" if class_name else ", or name the agent's class (--class NAME)"),
        ), skipped
    if not files:
        return (str(folder), student, f"no *.py file in {student}/"), skipped
    return (str(files[0]), student, _link(files[0]) if files[0].is_symlink() else None), skipped


def _scan(entry: str, class_name: str | None) -> tuple[list[_Found], list[Skipped]]:
    """The submissions of a class folder: its ``*.py`` files, or a folder per student (:func:`_student_folder`),
    and what else it holds (not graded)."""
    children = sorted(Path(entry).iterdir())
    found = [p for p in children if _is_python(p)]
    folders = [p for p in children if p.is_dir() and p.name != "__pycache__"]
    nested = [p for p in folders if not p.is_symlink() and any(_is_python(q) for q in p.iterdir())]
    if found and nested:
        raise ValueError(
            f"{entry}: holds *.py files and folders of them ({_listed(nested)}): a class folder holds one *.py file "
            "per student, or one folder per student (docs/grading.md)"
        )
    if nested:  # a learning platform's export: a folder per student, the student's name
        out, skipped = [], []
        for child in children:
            if child in folders and not child.name.startswith("."):
                one, left = _student_folder(child, class_name)
                out.append(one)
                skipped += left
            elif child.name != "__pycache__":
                skipped.append(Skipped(str(child), "not graded: not a folder of a student"))
        return out, skipped
    others = [p for p in children if p.name != "__pycache__" and p not in found]
    if not found:
        besides = f" (it holds {_listed(others)}: a submission is a FILE.py)" if others else ""
        raise ValueError(f"{entry}: no *.py file in this folder{besides}")
    return [(str(p), None, _link(p) if p.is_symlink() else None) for p in found], [_not_graded(p) for p in others]


def _parents(paths: Sequence[str]) -> list[str]:
    """The shortest ends of the files' folders (``alice``, or ``2024/alice``) that tell the files apart."""
    parts = [Path(os.path.abspath(path)).parent.parts[1:] for path in paths]
    for k in range(1, max(len(p) for p in parts) + 1):
        ends = ["/".join(p[-k:]) for p in parts]
        if len(set(ends)) == len(ends):
            return ends
    return ["/".join(p) for p in parts]  # (distinct files: not reached)


def _names(found: Sequence[tuple[str, str | None]]) -> list[tuple[str, str]]:
    """Each submission's student name and file as the gradebook gives them: the file's stem and name, or, for
    the files of a folder per student and for files of one name in several folders (``export/*/my_agent.py``),
    the folder's name and ``folder/name``."""
    stems = [Path(path).stem for path, _ in found]
    by_stem: dict[str, list[int]] = {}
    for i, (_, student) in enumerate(found):
        if student is None:
            by_stem.setdefault(stems[i], []).append(i)
    parent: dict[int, str] = {}
    for indices in by_stem.values():
        if len(indices) > 1:
            parent.update(zip(indices, _parents([found[i][0] for i in indices])))
    out = []
    for i, (path, student) in enumerate(found):
        name = "" if os.path.isdir(path) else os.path.basename(path)
        if student is not None:
            out.append((student, f"{student}/{name}"))
        elif i in parent:
            out.append((parent[i], f"{parent[i]}/{name}"))
        else:
            out.append((stems[i], name))
    return out


def find_submissions(entries: Sequence[str], class_name: str | None = None) -> list[Submission]:
    """The submissions of a class (:func:`find_class`), without what it does not grade."""
    return find_class(entries, class_name)[0]


def missing_folder(entry: str) -> str | None:
    """The one-line error for a submission given as a folder that is not there, else ``None``.

    A folder is what a path ending in a separator names (``submisions/``), or one with a separator that names no
    ``FILE.py`` and no ``:NAME`` or ``,key=value`` spec (``/autograder/submission``). Without this it was refused as
    a malformed agent spec, or as a class option given without a class.
    """
    if os.path.exists(entry) or entry.endswith(".py") or ":" in entry or "," in entry:
        return None
    if entry.endswith(("/", os.sep)) or "/" in entry or os.sep in entry:
        return f"{entry}: no such folder"
    return None


def find_class(entries: Sequence[str], class_name: str | None = None) -> tuple[list[Submission], list[Skipped]]:
    """The submissions of a class, and the files of its folders that are not graded.

    Each entry is a folder, a ``FILE.py`` or a ``FILE.py:NAME`` spec (``NAME`` wins over ``class_name``). A
    folder holds one ``*.py`` file per student (sorted), or one folder per student (a learning platform's
    export, ``export/<student>/my_agent.py``: the student's name is the folder's; of several ``*.py`` files the
    one with the agent class); every other file in it is named, not graded (a name ending in ``.PY`` too).
    Files of one name in several folders are told apart by their folders (:func:`_names`).

    A symbolic link in a folder is not followed: it is that student's problem (not loaded), since it
    could point at any file the grader can read, or at another student's file.

    Raises:
        ValueError: an entry that is none of these, a folder without ``*.py`` files (or with both files and
            folders of them), a file given twice.
    """
    from agents.players.registry import parse_agent_spec

    found: list[tuple[str, str | None, str | None, str | None]] = []  # path, spec, student, problem
    skipped: list[Skipped] = []
    for entry in entries:
        missing = missing_folder(entry)
        if missing is not None:
            raise ValueError(missing)
        if os.path.isdir(entry):
            files, left = _scan(entry, class_name)
            found += [(path, None, student, problem) for path, student, problem in files]
            skipped += left
        elif entry.endswith(".py"):
            if not os.path.isfile(entry):
                raise ValueError(f"{entry}: no such file")
            found.append((entry, None, None, None))
        else:
            parsed = parse_agent_spec(entry)
            if parsed is None or not parsed.is_file:
                raise ValueError(f"{entry}: expected a folder, a FILE.py or FILE.py:NAME")
            if not os.path.isfile(parsed.source):
                raise ValueError(f"{entry}: no such file {parsed.source}")
            found.append((parsed.source, entry, None, None))
    seen: set[str] = set()
    for path, _, _, problem in found:
        real = os.path.realpath(path)
        if problem is None and real in seen:
            raise ValueError(f"{path}: given more than once")
        seen.add(real)
    names = _names([(path, student) for path, _, student, _ in found])
    folders = _folders([student for student, _ in names])
    out = []
    for (path, spec, _, problem), (student, file), folder in zip(found, names, folders):
        if problem is None and spec is None:
            name, problem = find_agent_class(path, class_name)
            spec = f"{path}:{name}" if name is not None else None
        out.append(Submission(student, folder, path, spec if problem is None else None, problem, file))
    return out, skipped


# ------------------------------------------------------------------ grading
#: why a file :func:`reads_back` refuses is not graded as it is
UNREADABLE_NAME = (
    "its path does not read back as its agent spec (a ':' or ',' in a name, or a leading space, would make the "
    "spec name another file or agent): rename it"
)


def reads_back(path: str, spec: str) -> bool:
    """Whether the agent spec ``spec`` built for the file ``path`` names that file: a ``:`` or ``,`` in a
    file name would make it name another file and arguments, or a built-in agent (a student could name
    her file ``bob.py:BobAgent,note=1.py`` to be played as Bob)."""
    from agents.players.registry import parse_agent_spec

    try:
        parsed = parse_agent_spec(spec)
    except ValueError:
        return False
    return parsed is not None and parsed.is_file and parsed.source == path


def _stage(submission: Submission, folder: str) -> str | None:
    """The spec to grade: a file whose path would not read back as its spec (:func:`reads_back`) is
    copied to ``folder`` under the student's folder name first."""
    if submission.spec is None or reads_back(submission.path, submission.spec):
        return submission.spec
    attr = submission.spec[len(submission.path) + 1 :]
    copy = os.path.join(folder, f"{submission.folder}.py")
    shutil.copyfile(submission.path, copy)
    return f"{copy}:{attr}"


def _grade_one(
    submission: Submission,
    spec: str | None,
    rules: Rules,
    options: dict[str, Any],
    baselines: Baselines,
    rubric: Rubric | None,
    out: str,
    alongside: int = 0,
) -> StudentResult:
    """Grade one student and write their report files (in the worker process); ``alongside``: graded again alone
    after timeouts while graded that many at a time (the report says so)."""
    if spec is None:
        return StudentResult(submission, "no_agent", None, _no_score(rubric, "no agent class"), [], submission.problem)
    # the files beside it are the student's only in a folder of their own (a platform's export), graded from there
    own = "/" in submission.file and spec == submission.spec
    report = grade(spec, rules, baselines=baselines, own_folder=own, **options)
    report["submission"] = submission.spec  # the path as given, not a staged copy's
    if alongside:
        report["problems"].append(
            f"graded again alone: its first grading, {alongside} submissions at a time, had time limit failures, "
            "which a classmate's busy processes can cause; this grade is the second"
        )
    folder = Path(out) / submission.folder
    folder.mkdir(parents=True, exist_ok=True)
    files = [str(p) for p in write_report(report, folder)]
    earned = score_report(rubric, report) if rubric is not None else []
    slim = {key: value for key, value in report.items() if key not in _DROPPED}
    status = "interrupted" if report.get("interrupted") else report["status"]  # (not a max-failures partial)
    return StudentResult(submission, status, slim, earned, files)


#: the failure kinds a wall-clock limit decides: graded alongside others, a classmate's load can cause them
TIMED = ("timeout", "budget")


def _timed_out(result: StudentResult) -> bool:
    """Whether a grade had failures of a wall-clock limit (:data:`TIMED`, loading included)."""
    kinds = ((result.report or {}).get("failures") or {}).get("by_kind") or {}
    return any(kinds.get(kind) for kind in TIMED)


def _no_score(rubric: Rubric | None, why: str) -> list[Earned]:
    return [Earned(c.name, 0.0, c.points, f"no score: {why}") for c in rubric.criteria] if rubric else []


#: in a grading worker: the SIGINTs received, and whether a grade is in progress
_SIGNALLED: list[int] = []
_GRADING: list[bool] = []


def _worker_start() -> None:
    """A grading worker: non-dumpable; the first SIGINT (Ctrl-C, or the class grade's own when it is
    interrupted) ends the grade in progress with a partial report; an idle worker grades nothing more
    (it stays alive: a worker that died would break the pool and lose the other workers' reports)."""
    protect_process()

    def interrupt(signum: int, frame: Any) -> None:
        _SIGNALLED.append(signum)
        if _GRADING and len(_SIGNALLED) == 1:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)


def _grade_in_worker(*args: Any) -> StudentResult:
    """:func:`_grade_one` in a worker: not at all once interrupted."""
    submission = args[0]
    if _SIGNALLED:
        return StudentResult(submission, "not_graded", None, _no_score(args[5], "not graded"), [], "not graded")
    _GRADING.append(True)
    try:
        return _grade_one(*args)
    finally:
        _GRADING.clear()


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def grade_class(
    submissions: Sequence[Submission],
    rules: str | os.PathLike[str] | Rules,
    out: str | os.PathLike,
    *,
    games: int = 2000,
    seed: int = 0,
    limits: Limits | None = None,
    isolated: bool = True,
    solver: str = "allow",
    jobs: int | None = None,
    rubric: Rubric | None = None,
    progress: Callable[[str], None] | None = None,
    starter: Sequence[str | os.PathLike[str]] = (),
    similar_share: float = DEFAULT_SHARE,
    skipped: Sequence[Skipped] = (),
) -> ClassResult:
    """Grade ``submissions`` (:func:`find_submissions`) on the same games and write each report (module docstring).

    Args:
        submissions: the class.
        rules: ruleset name, rules file or :class:`Rules`.
        out: the class's folder; each student's files go to ``out/<folder>/``.
        games: games per agent.
        seed: the grading seed.
        limits: each submission's limits (:class:`agents.course.sandbox.Limits`).
        isolated: run each submission isolated (``False`` only for trusted code).
        solver: the library's solver and agents in the submissions: ``allow``, ``flag`` or ``forbid``.
        jobs: submissions graded at once (default: the cores this process may use); 1 grades in this process.
        rubric: the points (:mod:`agents.course.rubric`); ``None``: no points.
        progress: called with a line per graded student.
        starter: the files every student was given (their code does not count as shared,
            :mod:`agents.course.similarity`).
        similar_share: the share of a file found in another from which the pair is reported as similar.
        skipped: the files of the class's folders not graded (:func:`find_class`), for the class files.

    Returns:
        The :class:`ClassResult` (the class files are written by :func:`agents.course.gradebook.write_class`).

    Raises:
        ValueError: a bad argument or ruleset, no isolation here while ``isolated`` (never for what a
            submission does).
    """
    rules = load_rules(rules)
    jobs = default_jobs() if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if not submissions:
        raise ValueError("no submissions to grade")
    if isolated:
        from agents.course.isolation import isolation_problem

        problem = isolation_problem()
        if problem is not None:
            raise ValueError(f"{problem}; to grade without isolation (trusted code only) pass --unisolated")
    limits = limits or Limits()
    start = time.perf_counter()
    try:
        given = [python_source(path) for path in starter]
    except OSError as error:
        raise ValueError(f"starter {error.filename}: cannot read this file") from None
    compared = {s.folder: s.path for s in submissions if not (s.spec is None and os.path.islink(s.path))}
    similar = similar_pairs(read_sources(compared), given, share=similar_share)  # (links are not followed)
    solution = load_solution(rules, required=True)  # solved (and cached) once, before the workers load it
    baselines = reference_games(rules, games=games, seed=seed, solution=solution)
    options = {"games": games, "seed": seed, "limits": limits, "isolated": isolated, "solver": solver}
    staging = tempfile.mkdtemp(prefix="dice-poker-class-")
    results: dict[int, StudentResult] = {}
    interrupted = False
    note = progress or (lambda line: None)
    try:
        specs = [_stage(s, staging) for s in submissions]
        if jobs == 1:
            for i, s in enumerate(submissions):
                done = results[i] = _grade_one(s, specs[i], rules, options, baselines, rubric, str(out))
                note(_line(done))
                if done.report is not None and done.report.get("interrupted"):
                    raise KeyboardInterrupt
        else:
            interrupted = _grade_parallel(
                submissions, specs, rules, options, baselines, rubric, out, jobs, results, note
            )
            at_once = min(jobs, len(submissions))
            for i in [i for i in sorted(results) if at_once > 1 and not interrupted and _timed_out(results[i])]:
                note(summary_text_line(f"{submissions[i].student}: time limit failures: graded again alone"))
                done = results[i] = _grade_one(
                    submissions[i], specs[i], rules, options, baselines, rubric, str(out), at_once
                )
                note(_line(done))
                if done.report is not None and done.report.get("interrupted"):
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        interrupted = True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    students = []
    for i, s in enumerate(submissions):
        if i not in results:
            results[i] = StudentResult(s, "not_graded", None, _no_score(rubric, "not graded"), [], "not graded")
        students.append(results[i])
    return ClassResult(
        rules=rules,
        games=int(games),
        seed=int(seed),
        limits=limits,
        isolated=isolated,
        solver=solver,
        jobs=jobs,
        rubric=rubric,
        baselines=baselines,
        optimal_expected_score=float(solution.expected_score),
        students=students,
        interrupted=interrupted,
        seconds=time.perf_counter() - start,
        similar=similar,
        skipped=list(skipped),
    )


def _grade_parallel(
    submissions: Sequence[Submission],
    specs: Sequence[str | None],
    rules: Rules,
    options: dict[str, Any],
    baselines: Baselines,
    rubric: Rubric | None,
    out: str | os.PathLike,
    jobs: int,
    results: dict[int, Any],  # StudentResult values: `results[i].report` is narrowed below, which mypy cannot do
    note: Callable[[str], None],
) -> bool:
    """Grade in ``jobs`` worker processes; fills ``results``; ``True`` when interrupted."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("spawn")  # no state of this process (threads, handlers) is inherited
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(submissions)), mp_context=context, initializer=_worker_start)
    futures = {
        pool.submit(_grade_in_worker, s, specs[i], rules, options, baselines, rubric, str(out)): i
        for i, s in enumerate(submissions)
    }
    interrupted = False
    try:
        for future in as_completed(futures):
            i = futures[future]
            try:
                results[i] = future.result()
            except Exception as error:  # noqa: BLE001 - the grader's own failure (a worker died): recorded
                message = f"grading failed: {type(error).__name__}: {error}"
                results[i] = StudentResult(submissions[i], "error", None, _no_score(rubric, "error"), [], message)
            note(_line(results[i]))
            if results[i].report is not None and results[i].report.get("interrupted"):
                interrupted = True
    except KeyboardInterrupt:
        interrupted = True
        for pid in list(getattr(pool, "_processes", None) or {}):  # the grades in progress end partial
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:
                pass
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    for future, i in futures.items():  # those that ended after the interruption
        if i not in results and future.done() and not future.cancelled() and future.exception() is None:
            results[i] = future.result()
    return interrupted


def flags(report: dict[str, Any]) -> str:
    """What an instructor looks for besides the failures, ``;``-separated: ``stdout:BYTES`` (the agent printed),
    ``solver:POLICY`` (it imported the library's solver or agents, or tried to, under ``flag`` or ``forbid``),
    ``stopped:REASON`` (grading stopped asking it for decisions: too many failures, the time budget),
    ``luck:+Z`` (its games' dice luck is Z standard errors above 0, :data:`LUCK_Z`: past what chance gives an
    agent that cannot know the dice in advance)."""
    out = []
    printed = (report.get("stdout") or {}).get("bytes") or 0
    if printed:
        out.append(f"stdout:{printed}")
    solver = report.get("solver") or {}
    if solver.get("imported") and solver.get("policy") in ("flag", "forbid"):
        out.append(f"solver:{solver['policy']}")
    stopped = (report.get("failures") or {}).get("stopped_because")
    if stopped:
        out.append(f"stopped:{stopped}")
    z = luck_z(report)
    if z is not None and z > LUCK_Z:
        out.append(f"luck:+{z:.1f}")
    return ";".join(out)


#: standard errors of luck above 0 from which a grade is flagged (chance: about 3 in 100,000 honest grades)
LUCK_Z = 4.0


def luck_z(report: dict[str, Any]) -> float | None:
    """How many standard errors the submission's mean luck (score minus the worth of its play) is above 0.

    Any agent that cannot see the dice ahead scores, on average, what its decisions are worth (the optimal
    expectation minus its exact regret): its luck is 0 give or take its interval. One that knows the dice
    in advance (a guessed grading seed) deviates from the expected-value play, which the regret counts, and
    scores more than that all the same. ``None`` without the figures (no regret).
    """
    row = (report.get("agents") or {}).get("submission") or {}
    mean, ci = row.get("luck_mean"), row.get("luck_ci95")
    if not isinstance(mean, (int, float)) or not isinstance(ci, (int, float)) or not ci > 0:
        return None
    return float(mean) / (float(ci) / Z95)


def similar_to(result: ClassResult, student: StudentResult) -> list[tuple[str, float]]:
    """The students whose code is much like this student's (:attr:`ClassResult.similar`): ``(name, share)``,
    ``name`` as the gradebook's student column gives it (:func:`student_name`), ``share`` the larger of the two
    shares."""
    me = student.submission.folder
    return [
        (student_name(result, pair.second if pair.first == me else pair.first), pair.share)
        for pair in result.similar
        if me in (pair.first, pair.second)
    ]


def student_name(result: ClassResult, folder: str) -> str:
    """The name a student's folder stands for (the file's name as given, ``;`` made ``,`` so that it stays one
    item of a gradebook's flags); the folder itself when no student has it."""
    names = {student.submission.folder: student.submission.student for student in result.students}
    return names.get(folder, folder).replace(";", ",")


def _line(result: StudentResult) -> str:
    """One line per graded student for the terminal (control characters replaced)."""
    text = f"{result.submission.student}: {result.status}"
    row = (result.report or {}).get("agents", {}).get("submission")
    if row is not None and row.get("percent_of_optimal") is not None:
        text += f", {row['percent_of_optimal']:.1f}% of optimal"
        if row.get("estimated_percent_of_optimal") is not None:
            text += f" ({row['estimated_percent_of_optimal']:.1f}% luck-free)"
    if result.status == "interrupted":
        text += ", no grade"
    elif result.earned and result.graded:
        text += f", {sum(e.points for e in result.earned):g} of {sum(e.max_points for e in result.earned):g} points"
    if result.error:
        text += f" ({result.error})"
    if result.report:
        marked = flags(result.report)
        text += f" [{marked.replace(';', ', ')}]" if marked else ""
    return summary_text_line(text)
