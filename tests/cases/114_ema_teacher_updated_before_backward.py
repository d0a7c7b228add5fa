"""Mean-teacher training step: the EMA teacher (a deepcopy of the student) is updated in place under no_grad before the backward that still needs the teacher weights its forward saved."""
# outcome: inplace-error
# far-apart
import copy

import torch
import torch.nn as nn


def train_step(student, teacher, optimizer, x):
    consistency = (student(x) - teacher(x)).pow(2).mean()  # saved-by
    optimizer.zero_grad()
    with torch.no_grad():
        for t, s in zip(teacher.parameters(), student.parameters()):
            t.mul_(0.99).add_(s, alpha=0.01)  # error: IPL001
    consistency.backward()
    optimizer.step()


def run() -> None:
    torch.manual_seed(0)
    student = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    teacher = copy.deepcopy(student)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    train_step(student, teacher, optimizer, torch.randn(4, 8))
