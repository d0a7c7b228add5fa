"""A two-branch block from a forum question: `x = self.conv1(input)` feeds the side branch `x_p = self.conv1_p(x)`, then the main branch does `x += some_layer`, writing into the `x` that conv1_p saved for its weight gradient."""
# outcome: inplace-error
# source: https://discuss.pytorch.org/t/when-would-the-error-one-of-the-variables-needed-for-gradient-computation-has-been-modified-occur/11976
# repo: discuss.pytorch.org/11976
# category: residual
# twin: 455_forum_bifurcate_branch_conv_iadd_fixed.py
import torch
import torch.nn as nn
import torch.nn.functional as F


class BifurcateNet(nn.Module):
    # the poster's three lines, inside the smallest block that runs them
    def __init__(self):
        super(BifurcateNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv1_p = nn.Conv2d(16, 16, 3, padding=1)
        self.conv_s = nn.Conv2d(3, 16, 1)
        self.fc = nn.Linear(32, 10)

    def forward(self, input):
        some_layer = self.conv_s(input)
        x = self.conv1(input) # main branch
        x_p = self.conv1_p(x) # another branch  # saved-by
        x += some_layer # main branch  # error: IPL001
        x = F.adaptive_avg_pool2d(F.relu(x), 1).flatten(1)
        x_p = F.adaptive_avg_pool2d(F.relu(x_p), 1).flatten(1)
        return self.fc(torch.cat([x, x_p], 1))


if __name__ == "__main__":
    net = BifurcateNet()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for step in range(2):
        inputs = torch.randn(4, 3, 16, 16)
        labels = torch.randint(0, 10, (4,))
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
        print(step, loss.item())
