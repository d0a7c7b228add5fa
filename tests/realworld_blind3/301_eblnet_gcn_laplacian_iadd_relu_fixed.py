"""EBLNet's ContourPointGCN with the fix from the thread: the GCN's Laplacian smoothing adds the node features out of place (`z = z + x`); trained a few steps with the joint loss."""
# outcome: ok
# source: https://github.com/hehao13/EBLNet/issues/9
# repo: hehao13/EBLNet
# category: residual
# twin: 300_eblnet_gcn_laplacian_iadd_relu.py
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- network/nn/mynn.py (the parts used here) ----
def Norm2d(in_channels):
    return nn.BatchNorm2d(in_channels)


def Upsample(x, size):
    return F.interpolate(x, size=size, mode='bilinear', align_corners=True)


# stand-in for network/resnet_d.py (ImageNet ResNet-50 not loaded here): a small trunk with
# the same stage widths (256, 512, 1024, 2048) and strides (4, 4, 8, 8, 8)
def _stage(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class _ResNetStandIn(nn.Module):
    def __init__(self):
        super(_ResNetStandIn, self).__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = _stage(64, 256, 1)
        self.layer2 = _stage(256, 512, 2)
        self.layer3 = _stage(512, 1024, 1)
        self.layer4 = _stage(1024, 2048, 1)


class Resnet_Deep:
    @staticmethod
    def resnet50():
        return _ResNetStandIn()


# ---- network/nn/operators.py ----
class _AtrousSpatialPyramidPoolingModule(nn.Module):
    """
    operations performed:
      1x1 x depth
      3x3 x depth dilation 6
      3x3 x depth dilation 12
      3x3 x depth dilation 18
      image pooling
      concatenate all together
      Final 1x1 conv
    """

    def __init__(self, in_dim, reduction_dim=256, output_stride=16, rates=(6, 12, 18)):
        super(_AtrousSpatialPyramidPoolingModule, self).__init__()

        if output_stride == 8:
            rates = [2 * r for r in rates]
        elif output_stride == 16:
            pass
        else:
            raise 'output stride of {} not supported'.format(output_stride)

        self.features = []
        # 1x1
        self.features.append(
            nn.Sequential(nn.Conv2d(in_dim, reduction_dim, kernel_size=1, bias=False),
                          Norm2d(reduction_dim), nn.ReLU(inplace=True)))
        # other rates
        for r in rates:
            self.features.append(nn.Sequential(
                nn.Conv2d(in_dim, reduction_dim, kernel_size=3,
                          dilation=r, padding=r, bias=False),
                Norm2d(reduction_dim),
                nn.ReLU(inplace=True)
            ))
        self.features = torch.nn.ModuleList(self.features)

        # img level features
        self.img_pooling = nn.AdaptiveAvgPool2d(1)
        self.img_conv = nn.Sequential(
            nn.Conv2d(in_dim, reduction_dim, kernel_size=1, bias=False),
            Norm2d(reduction_dim), nn.ReLU(inplace=True))

    def forward(self, x):
        x_size = x.size()

        img_features = self.img_pooling(x)
        img_features = self.img_conv(img_features)
        img_features = Upsample(img_features, x_size[2:])
        out = img_features

        for f in self.features:
            y = f(x)
            out = torch.cat((out, y), 1)
        return out


# ---- network/nn/contour_point_gcn.py ----
def get_uncertain_point_coords_on_grid(uncertainty_map, num_points):
    R, _, H, W = uncertainty_map.shape

    num_points = min(H * W, num_points)
    point_indices = torch.topk(uncertainty_map.view(R, H * W), k=num_points, dim=1)[1]
    point_coords = torch.zeros(R, num_points, 2, dtype=torch.float, device=uncertainty_map.device)
    point_coords[:, :, 0] = point_indices % W
    point_coords[:, :, 1] = point_indices // W
    return point_indices, point_coords


def point_sample(input, point_indices, **kwargs):
    N, C, H, W = input.shape
    point_indices = point_indices.unsqueeze(1).expand(-1, C, -1)
    flatten_input = input.flatten(start_dim=2)
    sampled_feats = flatten_input.gather(dim=2, index=point_indices).view_as(point_indices)   # n c p
    return sampled_feats


class GCN(nn.Module):
    """
        Implementation of simple GCN operation in Glore Paper cvpr2019
    """
    def __init__(self, node_num, node_fea):
        super(GCN, self).__init__()
        self.node_num = node_num
        self.node_fea = node_fea
        self.conv_adj = nn.Conv1d(self.node_num, self.node_num, kernel_size=1, bias=False)
        self.bn_adj = nn.BatchNorm1d(self.node_num)

        self.conv_wg = nn.Conv1d(self.node_fea, self.node_fea, kernel_size=1, bias=False)
        self.bn_wg = nn.BatchNorm1d(self.node_fea)
        self.relu = nn.ReLU()

    def forward(self, x):
        """
            x: shape: (b, n, d)
        """
        z = self.conv_adj(x)
        z = self.bn_adj(z)
        z = self.relu(z)

        # Laplacian smoothing
        z = z + x
        z = z.transpose(1, 2).contiguous()  # (b, d, n)
        z = self.conv_wg(z)
        z = self.bn_wg(z)
        z = self.relu(z)
        z = z.transpose(1, 2).contiguous()  # (b, n, d)

        return z


class ContourPointGCN(nn.Module):
    def __init__(self, inplance, num_points, thresholds=0.8):
        super(ContourPointGCN, self).__init__()
        self.num_points = num_points
        self.thresholds = thresholds
        self.gcn = GCN(num_points, inplance)

    def forward(self, x, edge):
        """
            x is body feature (upsampled)
            edge is boundary feature map
            both features are the same size
        """
        B, C, H, W = x.size()
        edge[edge < self.thresholds] = 0
        edge_index, point_coords = get_uncertain_point_coords_on_grid(edge, self.num_points)

        gcn_features = point_sample(
            x, edge_index).permute(0, 2, 1)  # b, c, n - > b, n, c (n: points, c: features)

        gcn_features_reasoned = self.gcn(gcn_features)  # b, n, c

        gcn_features_reasoned = gcn_features_reasoned.permute(0, 2, 1)  # b, c, n

        edge_index = edge_index.unsqueeze(1).expand(-1, C, -1)

        final_features = x.reshape(B, C, H * W).scatter(2, edge_index, gcn_features_reasoned).view(B, C, H, W)

        return final_features


# ---- network/EBLNet.py ----
class Edge_extractorWofirstext(nn.Module):
    def __init__(self, inplane, skip_num, norm_layer):
        super(Edge_extractorWofirstext, self).__init__()
        self.skip_mum = skip_num
        self.pre_extractor = nn.Sequential(
            nn.Conv2d(inplane, inplane, kernel_size=3,
                      padding=1, groups=1, bias=False),
            norm_layer(inplane),
            nn.ReLU(inplace=True)
        )
        self.extractor = nn.Sequential(
            nn.Conv2d(inplane + skip_num, inplane, kernel_size=3,
                      padding=1, groups=8, bias=False),
            norm_layer(inplane),
            nn.ReLU(inplace=True)
        )

    def forward(self, aspp, layer1):  # 200        # 100
        seg_edge = torch.cat([F.interpolate(aspp, size=layer1.size()[2:], mode='bilinear',
                                            align_corners=True), layer1], dim=1)  # 200
        seg_edge = self.extractor(seg_edge)  # 200
        seg_body = F.interpolate(aspp, layer1.size()[2:], mode='bilinear', align_corners=True) - seg_edge

        return seg_edge, seg_body


class EBLNet(nn.Module):
    """
    Implement deeplabv3 plus module without depthwise conv
    A: stride=8
    B: stride=16
    with skip connection
    """

    def __init__(self, num_classes, trunk='seresnext-50', criterion=None, variant='D',
                 skip='m1', skip_num=48, num_cascade=4,
                 num_points=96, threshold=0.8):
        super(EBLNet, self).__init__()
        self.criterion = criterion
        self.variant = variant
        self.skip = skip
        self.skip_mum = skip_num
        self.num_cascade = num_cascade
        self.num_points = num_points
        self.threshold = threshold

        if trunk == 'resnet-50-deep':
            resnet = Resnet_Deep.resnet50()
            resnet.layer0 = nn.Sequential(resnet.conv1, resnet.bn1, resnet.relu, resnet.maxpool)
        else:
            raise ValueError('Only support resnet50 and resnet101 for now')

        self.layer0 = resnet.layer0
        self.layer1, self.layer2, self.layer3, self.layer4 = \
            resnet.layer1, resnet.layer2, resnet.layer3, resnet.layer4

        if self.variant == 'D':
            for n, m in self.layer3.named_modules():
                if 'conv2' in n:
                    m.dilation, m.padding, m.stride = (2, 2), (2, 2), (1, 1)
                elif 'downsample.0' in n:
                    m.stride = (1, 1)
            for n, m in self.layer4.named_modules():
                if 'conv2' in n:
                    m.dilation, m.padding, m.stride = (4, 4), (4, 4), (1, 1)
                elif 'downsample.0' in n:
                    m.stride = (1, 1)
        else:
            print('Not using dilation')

        self.aspp = _AtrousSpatialPyramidPoolingModule(in_dim=2048, reduction_dim=256,
                                                       output_stride=8 if self.variant == 'D' else 16)

        if self.skip == 'm1':
            self.bot_fine = nn.Conv2d(256, self.skip_mum, kernel_size=1, bias=False)
        elif self.skip == 'm2':
            self.bot_fine = nn.Conv2d(512, self.skip_mum, kernel_size=1, bias=False)
        else:
            raise ValueError('Not a valid skip')
        self.body_fines = nn.ModuleList()
        for i in range(self.num_cascade):
            inchannels = 2 ** (11 - i)
            self.body_fines.append(nn.Conv2d(inchannels, 48, kernel_size=1, bias=False))
        self.body_fuse = [nn.Conv2d(256 + 48, 256, kernel_size=1, bias=False) for _ in range(self.num_cascade)]
        self.body_fuse = nn.ModuleList(self.body_fuse)

        self.bot_aspp = nn.Conv2d(1280, 256, kernel_size=1, bias=False)

        self.edge_extractors = [Edge_extractorWofirstext(256, norm_layer=Norm2d, skip_num=48)
                                for _ in range(self.num_cascade)]
        self.edge_extractors = nn.ModuleList(self.edge_extractors)

        self.refines = [ContourPointGCN(256, self.num_points, self.threshold) for _ in range(self.num_cascade)]
        self.refines = nn.ModuleList(self.refines)

        self.edge_out_pre = [nn.Sequential(
            nn.Conv2d(256, 256, kernel_size=3, padding=1, bias=False),
            Norm2d(256),
            nn.ReLU(inplace=True)) for _ in range(self.num_cascade)]
        self.edge_out_pre = nn.ModuleList(self.edge_out_pre)
        self.edge_out = nn.ModuleList([nn.Conv2d(256, 1, kernel_size=1, bias=False)
                                       for _ in range(self.num_cascade)])

        self.body_out_pre = [nn.Sequential(
            nn.Conv2d(256, 256, kernel_size=3, padding=1, bias=False),
            Norm2d(256),
            nn.ReLU(inplace=True)) for _ in range(self.num_cascade)]
        self.body_out_pre = nn.ModuleList(self.body_out_pre)
        self.body_out = nn.ModuleList([nn.Conv2d(256, num_classes, kernel_size=1, bias=False)
                                       for _ in range(self.num_cascade)])

        self.final_seg_out_pre = [nn.Sequential(
            nn.Conv2d(256, 256, kernel_size=3, padding=1, bias=False),
            Norm2d(256),
            nn.ReLU(inplace=True)) for _ in range(self.num_cascade - 1)]
        self.final_seg_out_pre.append(nn.Sequential(
            nn.Conv2d(512, 256, kernel_size=3, padding=1, bias=False),
            Norm2d(256),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1, bias=False),
            Norm2d(256),
            nn.ReLU(inplace=True)))
        self.final_seg_out_pre = nn.ModuleList(self.final_seg_out_pre)
        self.final_seg_out = nn.ModuleList([nn.Conv2d(256, num_classes, kernel_size=1, bias=False)
                                            for _ in range(self.num_cascade)])

    def forward(self, x, gts=None):

        x_size = x.size()  # 800
        feats = []
        feats.append(self.layer0(x))  # 200
        feats.append(self.layer1(feats[0]))  # 200, 200
        feats.append(self.layer2(feats[1]))  # 200, 200, 100
        feats.append(self.layer3(feats[2]))  # 200, 200, 100, 100
        feats.append(self.layer4(feats[3]))  # 200, 200, 100, 100, 100
        aspp = self.aspp(feats[-1])  # 100
        fine_size = feats[1].size()  # 200

        seg_edges = []
        seg_edge_outs = []
        seg_bodys = []
        seg_body_outs = []
        seg_finals = []
        seg_final_outs = []
        aspp = self.bot_aspp(aspp)  # 100
        final_fuse_feat = F.interpolate(aspp, size=fine_size[2:], mode='bilinear', align_corners=True)  # 200

        low_feat = self.bot_fine(feats[1])  # 200

        for i in range(self.num_cascade):
            if i == 0:
                last_seg_feat = aspp  # 100
            else:
                last_seg_feat = seg_finals[-1]  # 200
                last_seg_feat = F.interpolate(last_seg_feat, size=aspp.size()[2:],
                                              mode='bilinear', align_corners=True)  # 100

            seg_edge, seg_body = self.edge_extractors[i](last_seg_feat, low_feat)  # 200

            high_fine = F.interpolate(self.body_fines[i](feats[-(i + 1)]), size=fine_size[2:], mode='bilinear',
                                      align_corners=True)  # 200
            seg_body = self.body_fuse[i](torch.cat([seg_body, high_fine], dim=1))  # 200
            seg_body_pre = self.body_out_pre[i](seg_body)
            seg_body_out = F.interpolate(self.body_out[i](seg_body_pre), size=x_size[2:],
                                         mode='bilinear', align_corners=True)  # 800
            seg_bodys.append(seg_body_pre)
            seg_body_outs.append(seg_body_out)

            seg_edge_pre = self.edge_out_pre[i](seg_edge)  # 200
            seg_edge_out_pre = self.edge_out[i](seg_edge_pre)
            seg_edge_out = F.interpolate(seg_edge_out_pre, size=x_size[2:],
                                         mode='bilinear', align_corners=True)  # 800
            seg_edges.append(seg_edge_pre)
            seg_edge_outs.append(seg_edge_out)

            seg_out = seg_body + seg_edge  # 200
            seg_out = self.refines[i](seg_out, torch.sigmoid(seg_edge_out_pre.clone().detach()))

            if i >= self.num_cascade - 1:
                seg_final_pre = self.final_seg_out_pre[i](torch.cat([final_fuse_feat, seg_out], dim=1))
            else:
                seg_final_pre = self.final_seg_out_pre[i](seg_out)
            seg_final_out = F.interpolate(self.final_seg_out[i](seg_final_pre), size=x_size[2:],
                                          mode='bilinear', align_corners=True)
            seg_finals.append(seg_final_pre)
            seg_final_outs.append(seg_final_out)

        if self.training:
            return self.criterion((seg_final_outs, seg_body_outs, seg_edge_outs), gts)

        return seg_final_outs[-1]


def EBLNet_resnet50_os8(num_classes, criterion, num_cascade=1, num_points=96, threshold=0.85):
    """
    ResNet-50 Based Network with stride=8 and cascade model
    """
    return EBLNet(num_classes, trunk='resnet-50-deep', criterion=criterion, variant='D', skip='m1',
                  num_cascade=num_cascade, num_points=num_points, threshold=threshold)


# stand-in for loss.py's joint loss: cross entropy on the final and body maps, BCE on the edges
class JointEdgeSegLoss(nn.Module):
    def __init__(self, num_classes):
        super(JointEdgeSegLoss, self).__init__()
        self.seg_loss = nn.CrossEntropyLoss()
        self.edge_loss = nn.BCEWithLogitsLoss()

    def forward(self, inputs, targets):
        seg_final_outs, seg_body_outs, seg_edge_outs = inputs
        mask, edge = targets
        loss = 0
        for out in seg_final_outs + seg_body_outs:
            loss = loss + self.seg_loss(out, mask)
        for out in seg_edge_outs:
            loss = loss + self.edge_loss(out, edge)
        return loss


if __name__ == "__main__":
    # train.py shrunk: Trans10k's 512x512 crops become two 64x64 random images, 3 classes
    torch.manual_seed(0)
    net = EBLNet_resnet50_os8(num_classes=3, criterion=JointEdgeSegLoss(3), num_cascade=1,
                              num_points=96, threshold=0.85)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    net.train()
    for step in range(2):
        inputs = torch.randn(2, 3, 64, 64)
        mask = torch.randint(0, 3, (2, 64, 64))
        edge = (torch.rand(2, 1, 64, 64) > 0.9).float()
        optimizer.zero_grad()
        main_loss = net(inputs, gts=(mask, edge))
        main_loss.backward()
        optimizer.step()
        print(step, main_loss.item())
