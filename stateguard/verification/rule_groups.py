"""The group of a rule that a later turn recalls: the key its earlier, word-bound computation used.

    turn 7, context: "a man is well paid if his 1976 wage is at least 1.25 times the median wage of all
                      men with the same South status"
        south_median = nls.groupby("south76")["wage76"].transform("median")
    turn 12: "Back to the withdrawn South-relative rule: which tested men reach 1.25 times their
              South-status median wage but stay below 700 cents?"
        medians = nls.groupby("black")["wage76"].median(); ... tested["black"].map(medians)

A turn whose words bind its rule's group to one column (`rule_windows.stated_group`), and whose code
takes the rule's one group statistic over exactly that column, is recorded once its state is
committed: the compared column, the multiple and the key. The record is kept only when words and code
agree, so a turn whose code took the wrong key records nothing.

A turn whose words say its rule is taken over a group but name no column ("1.3 times the median of
the women with the same nationality status (Swiss or foreign)") records the key its code took, with
the words of that phrase. Such a record is recalled only by a later turn whose own group phrase
shares a word with it ("their nationality group's median"): the words do not bind the column, but
they say the two turns speak of one group.

A later turn is read against the record when three things hold. Its question refers to a version not
in force ("withdrawn", "dropped", "earlier"). Its own words bind no group. Its code compares the same
column against the same multiple of a group statistic taken over other keys. Then the statistic is
re-run over the recorded key with `rule_windows`' edit, and a finding needs the answer to change
(the answer gate).
"""

from __future__ import annotations

from dataclasses import dataclass

from stateguard.inspection.code_model import CodeSemantics
from stateguard.verification import rule_multiples, rule_windows
from stateguard.verification.extract import RULE_VERSION


@dataclass(frozen=True)
class RuleGroup:
    turn: int
    subject: str  # the compared column, lower-cased
    multiple: float
    keys: tuple[str, ...]  # the columns the statistic is grouped by, as the data spells them
    said: frozenset[str] = frozenset()  # a record the code alone keyed: its group phrase's words


def _one_rule(code: str) -> rule_multiples.Site | None:
    sites = rule_multiples.sites(code)
    return sites[0] if len(sites) == 1 and sites[0].subject else None


def _share(said: frozenset[str], now: set[str]) -> bool:
    """Do two group phrases share a word ("nationality status", "nationality group"; "schooling"
    for "school": one word the start of the other, five letters at least)?"""
    return any(
        a == b or (min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a)))
        for a in said
        for b in now
    )


class RuleGroupHistory:
    """Rules whose group the words bound and the code took, by turn (in the order they were committed)."""

    def __init__(self) -> None:
        self.rules: list[RuleGroup] = []

    @staticmethod
    def agreeing(turn: int, code: str, sem: CodeSemantics, stated: rule_windows.Stated) -> RuleGroup | None:
        """The turn's rule, when its words' group is the one key its code takes the statistic over."""
        site = _one_rule(code)
        if stated.column is None or site is None:
            return None
        if not stated.matches(rule_windows.rule_keys(code, sem) or []):
            return None
        return RuleGroup(turn, site.subject.lower(), site.multiple, tuple(stated.keys))

    @staticmethod
    def taken(turn: int, rule: str, code: str, sem: CodeSemantics) -> RuleGroup | None:
        """The turn's rule and the key its code took, when its words say a group but bind none."""
        if RULE_VERSION.search(rule):
            return None  # a turn recalling a rule keys nothing for later ones
        site, said = _one_rule(code), rule_windows.group_words(rule)
        keys = rule_windows.rule_keys(code, sem) if site is not None and said else None
        if site is None or not keys:
            return None
        return RuleGroup(turn, site.subject.lower(), site.multiple, tuple(keys), frozenset(said))

    def record(self, rule: RuleGroup | None) -> None:
        if rule is not None:
            self.rules = [r for r in self.rules if r.turn != rule.turn] + [rule]

    def recalled(self, question: str, code: str, sem: CodeSemantics) -> rule_windows.Stated | None:
        """The recorded group of the rule the turn recomputes, when its code takes it over other keys."""
        site = _one_rule(code)
        if site is None or not RULE_VERSION.search(question):
            return None
        keys = rule_windows.rule_keys(code, sem)
        now = rule_windows.group_words(question)
        same = {
            r.keys
            for r in self.rules
            if r.subject == site.subject.lower()
            and abs(r.multiple - site.multiple) < 1e-9
            and (not r.said or _share(r.said, now))
        }
        if keys is None or len(same) != 1:
            return None
        first, *more = recorded = same.pop()
        said = f"the group an earlier turn took this rule's statistic over ({', '.join(recorded)})"
        stated = rule_windows.Stated(first, said, tuple(more))
        return None if stated.matches(keys) else stated
