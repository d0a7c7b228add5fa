"""DINOv2 DINOLoss: the teacher targets are sharpened with in-place Sinkhorn-Knopp normalisation (Q /= ...) under no_grad and the centre buffer is rebound from a momentum update each step, while the student loss accumulates with total_loss -=."""
# outcome: ok
# source: https://github.com/facebookresearch/dinov2/blob/main/dinov2/loss/dino_clstoken_loss.py
# repo: facebookresearch/dinov2
# category: iteration
import copy

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


class DINOLoss(nn.Module):
    def __init__(
        self,
        out_dim,
        student_temp=0.1,
        center_momentum=0.9,
    ):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, out_dim))
        self.updated = True
        self.reduce_handle = None
        self.len_teacher_output = None
        self.async_batch_center = None

    @torch.no_grad()
    def softmax_center_teacher(self, teacher_output, teacher_temp):
        self.apply_center_update()
        # teacher centering and sharpening
        return F.softmax((teacher_output - self.center) / teacher_temp, dim=-1)

    @torch.no_grad()
    def sinkhorn_knopp_teacher(self, teacher_output, teacher_temp, n_iterations=3):
        teacher_output = teacher_output.float()
        world_size = dist.get_world_size() if dist.is_initialized() else 1
        Q = torch.exp(teacher_output / teacher_temp).t()  # Q is K-by-B for consistency with notations from our paper
        B = Q.shape[1] * world_size  # number of samples to assign
        K = Q.shape[0]  # how many prototypes

        # make the matrix sums to 1
        sum_Q = torch.sum(Q)
        if dist.is_initialized():
            dist.all_reduce(sum_Q)
        Q /= sum_Q

        for it in range(n_iterations):
            # normalize each row: total weight per prototype must be 1/K
            sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
            if dist.is_initialized():
                dist.all_reduce(sum_of_rows)
            Q /= sum_of_rows
            Q /= K

            # normalize each column: total weight per sample must be 1/B
            Q /= torch.sum(Q, dim=0, keepdim=True)
            Q /= B

        Q *= B  # the columns must sum to 1 so that Q is an assignment
        return Q.t()

    def forward(self, student_output_list, teacher_out_softmaxed_centered_list):
        """
        Cross-entropy between softmax outputs of the teacher and student networks.
        """
        # TODO: Use cross_entropy_distribution here
        total_loss = 0
        for s in student_output_list:
            lsm = F.log_softmax(s / self.student_temp, dim=-1)
            for t in teacher_out_softmaxed_centered_list:
                loss = torch.sum(t * lsm, dim=-1)
                total_loss -= loss.mean()
        return total_loss

    @torch.no_grad()
    def update_center(self, teacher_output):
        self.reduce_center_update(teacher_output)

    @torch.no_grad()
    def reduce_center_update(self, teacher_output):
        self.updated = False
        self.len_teacher_output = len(teacher_output)
        self.async_batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
        if dist.is_initialized():
            self.reduce_handle = dist.all_reduce(self.async_batch_center, async_op=True)

    @torch.no_grad()
    def apply_center_update(self):
        if self.updated is False:
            world_size = dist.get_world_size() if dist.is_initialized() else 1

            if self.reduce_handle is not None:
                self.reduce_handle.wait()
            _t = self.async_batch_center / (self.len_teacher_output * world_size)

            self.center = self.center * self.center_momentum + _t * (1 - self.center_momentum)

            self.updated = True


# ---- a student/teacher pair and the train loop's use of the loss (ssl_meta_arch.py, shrunk) ----
if __name__ == "__main__":
    out_dim = 8
    student = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, out_dim))
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad = False
    dino_loss = DINOLoss(out_dim)
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-3)

    for it in range(4):
        global_crops = torch.randn(2, 3, 12)  # two global crops of a batch of 3
        with torch.no_grad():
            teacher_out = teacher(global_crops.flatten(0, 1))
            if it % 2 == 0:
                teacher_targets = dino_loss.softmax_center_teacher(teacher_out, teacher_temp=0.07)
                dino_loss.update_center(teacher_out)
            else:
                teacher_targets = dino_loss.sinkhorn_knopp_teacher(teacher_out, teacher_temp=0.07)
        teacher_list = teacher_targets.view(2, 3, -1).unbind(0)
        student_list = student(global_crops.flatten(0, 1)).view(2, 3, -1).unbind(0)
        loss = dino_loss(student_list, teacher_list)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            m = 0.99
            for ps, pt in zip(student.parameters(), teacher.parameters()):
                pt.mul_(m).add_((1 - m) * ps.detach())
        print(it, loss.item())
