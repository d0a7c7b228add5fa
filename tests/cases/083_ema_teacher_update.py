"""Mean-teacher training: student step, then the EMA teacher's parameters are updated in place under no_grad."""
# outcome: ok
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.no_grad()
def update_ema(teacher, student, decay=0.99):
    for t_param, s_param in zip(teacher.parameters(), student.parameters()):
        t_param.mul_(decay).add_(s_param, alpha=1 - decay)
    for t_buf, s_buf in zip(teacher.buffers(), student.buffers()):
        t_buf.copy_(s_buf)


def run() -> None:
    torch.manual_seed(0)
    student = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(2):
        x = torch.randn(6, 4)
        with torch.no_grad():
            targets = F.softmax(teacher(x + 0.05 * torch.randn_like(x)), dim=-1)
        loss = F.kl_div(F.log_softmax(student(x), dim=-1), targets, reduction="batchmean")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        update_ema(teacher, student)
