"""The synthesis teacher, shared by `synthesis` (corpus) and `training.rl` (prefix replay).

plan.py    TeacherPlan: the privileged knowledge behind one trajectory (variant, θ -> θ', stages)
policy.py  TeacherPolicy: the manager policy that demonstrates verification and every decision
probe.py   the as-stated recomputation probe and its verdict
requirements.py  constraints read off the question text (and the frame check in segment flows)
worker.py  the scripted worker both sides run (and the one that repeats its mistake)
log.py     ActivationLog: what the teacher saw and did at each activation
"""

from stateguard.teacher.log import ActionLog, ActivationLog
from stateguard.teacher.plan import FLOWS, TEACHER_VERSION, Segment, StageCheck, TeacherPlan, flow_named
from stateguard.teacher.policy import TeacherPolicy
from stateguard.teacher.worker import ResistingWorker, teacher_worker

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
