"""The synthesis teacher, shared by `synthesis` (corpus) and `training.rl` (prefix replay).

plan.py    the flows synthesized tasks run under (TeacherPlan, the privileged knowledge behind one
           trajectory, is a stored format: stateguard.artifacts.teacher_plan)
policy.py  TeacherPolicy: the manager policy that demonstrates verification and every decision
probe.py   the as-stated recomputation probe and its verdict
requirements.py  constraints read off the question text (and the frame check in segment flows)
worker.py  the scripted worker both sides run (and the one that repeats its mistake)
log.py     relay: fills an ActivationLog (stateguard.artifacts.activation_log) at each activation
"""

from stateguard.artifacts.activation_log import ActionLog, ActivationLog
from stateguard.artifacts.teacher_plan import TEACHER_VERSION, Segment, StageCheck, TeacherPlan
from synthesis.teacher.plan import FLOWS, flow_named
from synthesis.teacher.policy import TeacherPolicy
from synthesis.teacher.worker import ResistingWorker, teacher_worker

__all__ = [
    "FLOWS",
    "TEACHER_VERSION",
    "ActionLog",
    "ActivationLog",
    "ResistingWorker",
    "Segment",
    "StageCheck",
    "TeacherPlan",
    "TeacherPolicy",
    "flow_named",
    "teacher_worker",
]
