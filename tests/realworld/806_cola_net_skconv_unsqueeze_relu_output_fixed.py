"""COLA-Net's SKConv as the pull request proposes: the branch outputs are reshaped with the out-of-place `conv(x).unsqueeze(dim=1)` (and `fc(fea_z).unsqueeze(dim=1)`), so the ReLU outputs they saved stay intact."""
# outcome: ok
# source: https://github.com/MC-E/COLA-Net-Collaborative-Attention-Network-for-Image-Restoration/pull/7
# repo: MC-E/COLA-Net-Collaborative-Attention-Network-for-Image-Restoration
# category: residual
# twin: 805_cola_net_skconv_unsqueeze_relu_output.py
import torch
from torch import nn
import torch.nn.functional as F


class SKConv(nn.Module):
    def __init__(self, features, M, G, r, stride=1, L=32):
        """ Constructor
        Args:
            features: input channel dimensionality.
            WH: input spatial dimensionality, used for GAP kernel size.
            M: the number of branchs.
            G: num of convolution groups.
            r: the radio for compute d, the length of z.
            stride: stride, default 1.
            L: the minimum dim of the vector z in paper, default 32.
        """
        super(SKConv, self).__init__()
        d = max(int(features / r), L)
        self.M = M
        self.features = features
        self.convs = nn.ModuleList([])
        for i in range(M):
            if i ==0:
                self.convs.append(nn.Sequential(
                nn.Conv2d(features, features, kernel_size=3, stride=stride, padding=1),
                nn.BatchNorm2d(features),
                nn.ReLU(inplace=False)
            ))
            else:
                self.convs.append(
                nn.Sequential(
                nn.Conv2d(features,features,3,1,1),
                nn.BatchNorm2d(features),
                nn.ReLU(inplace=False),
                nn.Conv2d(features,features,3,1,1),
                nn.BatchNorm2d(features),
                nn.ReLU(inplace=False)
                )
                )
        # self.convs = nn.Sequential(*self.convs)
        # self.gap = nn.AvgPool2d(int(WH/stride))
        self.fc = nn.Linear(features, d)
        self.fcs = nn.ModuleList([])
        for i in range(M):
            self.fcs.append(
                nn.Linear(d, features)
            )
        # self.fcs = nn.Sequential(*self.fcs)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        for i, conv in enumerate(self.convs):
            fea = conv(x).unsqueeze(dim=1)
            if i == 0:
                feas = fea
            else:
                feas = torch.cat([feas, fea], dim=1)
        fea_U = torch.sum(feas, dim=1)
        # fea_s = self.gap(fea_U).squeeze_()
        fea_s = fea_U.mean(-1).mean(-1)
        fea_z = self.fc(fea_s)
        for i, fc in enumerate(self.fcs):
            vector = fc(fea_z).unsqueeze(dim=1)
            if i == 0:
                attention_vectors = vector
            else:
                attention_vectors = torch.cat([attention_vectors, vector], dim=1)
        attention_vectors = self.softmax(attention_vectors)
        attention_vectors = attention_vectors.unsqueeze(-1).unsqueeze(-1)
        fea_v = (feas * attention_vectors).sum(dim=1)
        return fea_v


class SKUnit(nn.Module):
    def __init__(self, in_features, out_features, M, G, r, mid_features=None, stride=1, L=32):
        """ Constructor
        Args:
            in_features: input channel dimensionality.
            out_features: output channel dimensionality.
            WH: input spatial dimensionality, used for GAP kernel size.
            M: the number of branchs.
            G: num of convolution groups.
            r: the radio for compute d, the length of z.
            mid_features: the channle dim of the middle conv with stride not 1, default out_features/2.
            stride: stride.
            L: the minimum dim of the vector z in paper.
        """
        super(SKUnit, self).__init__()
        if mid_features is None:
            mid_features = int(out_features / 2)
        self.feas = nn.Sequential(
            nn.Conv2d(in_features, mid_features, 1, stride=1),
            nn.BatchNorm2d(mid_features),
            SKConv(mid_features, M, G, r, stride=stride, L=L),
            nn.BatchNorm2d(mid_features),
            nn.Conv2d(mid_features, out_features, 1, stride=1),
            nn.BatchNorm2d(out_features)
        )
        if in_features == out_features:  # when dim not change, in could be added diectly to out
            self.shortcut = nn.Sequential()
        else:  # when dim not change, in should also change dim to be added to out
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_features, out_features, 1, stride=stride),
                nn.BatchNorm2d(out_features)
            )
    def forward(self, x):
        fea = self.feas(x)
        return fea + self.shortcut(x)
if __name__ == "__main__":
    net = SKUnit(in_features=64,out_features=64,M=2,G=8,r=2)
    # for i in net:
    #     print(i.weight)
    # print(net.__class__.__name__)
    # print(net.parameters())
    # exit(0)
    input_im = torch.zeros((1,64,8,8))
    out_im = net(input_im)
    print(out_im.shape)
    # a restoration step as in trainer.py: L1 loss against a target, backward, Adam
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-4)
    for step in range(2):
        input_im = torch.randn((2,64,8,8))
        target = torch.randn((2,64,8,8))
        out_im = net(input_im)
        loss = F.l1_loss(out_im, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
