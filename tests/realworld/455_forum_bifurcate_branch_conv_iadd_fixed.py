"""The forum's two-branch block, fixed as the answer says: the main branch adds out of place (`x = x + some_layer`), leaving the `x` that conv1_p saved intact."""
# outcome: ok
# source: https://discuss.pytorch.org/t/when-would-the-error-one-of-the-variables-needed-for-gradient-computation-has-been-modified-occur/11976
# repo: discuss.pytorch.org/11976
# category: residual
# twin: 454_forum_bifurcate_branch_conv_iadd.py
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
        x_p = self.conv1_p(x) # another branch
        x = x + some_layer # main branch
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
