"""NWPU-MOC multi-class counting: the FPN neck builds its top-down path with `laterals[i - 1] += F.interpolate(...)`, in place on the lateral Conv2d block's ReLU output."""
# outcome: inplace-error
# source: https://github.com/lyongo/NWPU-MOC/issues/4
# repo: lyongo/NWPU-MOC
# category: residual
# twin: 205_nwpu_moc_fpn_lateral_iadd_fixed.py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from types import SimpleNamespace as edict

# ---- config.py (trimmed) ----
__C = edict()
cfg = __C
__C.SEED = 42
__C.DATASET = 'MOC_RS'
__C.MM = False
__C.NET = 'MCC'
__C.BACKBONE_FREEZE = False
__C.GPU_ID = [0]
__C.BASE_LR = 5*1e-5
__C.CONV_LR = 1e-6
__C.WEIGHT_DECAY = 1e-4
__C.LOSS_FUNCTION = 'Mse_loss'
__C.MODEL_ARCH = edict(
    backbone=dict(
        embed_dim=128,
        depths=[2, 2, 18],
        num_heads=[4, 8, 16],
        out_indices=(0, 1, 2),
        window_size=7,
        ape=False,
        drop_path_rate=0.3,
        patch_norm=True,
        use_checkpoint=False
    ),
    decode_head=edict(
        in_channels=[128, 256, 512]
    ))
__C.PRE_WEIGHTS = 'pretrained_models/swin_base_patch4_window7_224.pth'
__C.MAX_EPOCH = 1
__C.alpha = 1
__C.PRINT_FREQ = 1

backbone = cfg.MODEL_ARCH.backbone


# ---- stand-in for models/Transformers/ST.py (a Swin backbone): three feature maps at strides 4, 8, 16 ----
class ST(nn.Module):
    def __init__(self, in_chans, embed_dim, depths, num_heads, window_size, ape, drop_path_rate,
                 patch_norm, use_checkpoint, out_indices):
        super(ST, self).__init__()
        self.patch_embed = nn.Conv2d(in_chans, embed_dim, 4, 4)
        self.stages = nn.ModuleList([nn.Conv2d(embed_dim * 2 ** i, embed_dim * 2 ** (i + 1), 2, 2) for i in range(len(out_indices) - 1)])

    def init_weights(self, pretrained=None):
        pass  # no pretrained Swin weights here

    def forward(self, x):
        x = self.patch_embed(x)
        outs = [x]
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs


# ---- models/FPN/FPN_Head.py ----
class FPN(nn.Module):
    """
    Feature Pyramid Network.

    This is an implementation of - Feature Pyramid Networks for Object
    Detection (https://arxiv.org/abs/1612.03144)
    """

    def __init__(self,in_channels,out_channels,num_outs,start_level=0,end_level=-1,
                extra_convs_on_inputs=True,bn=True):
        super(FPN, self).__init__()
        assert isinstance(in_channels, list)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_ins = len(in_channels)
        self.num_outs = num_outs

        self.fp16_enabled = False

        if end_level == -1:
            self.backbone_end_level = self.num_ins
            assert num_outs >= self.num_ins - start_level
        else:
            # if end_level < inputs, no extra level is allowed
            self.backbone_end_level = end_level
            assert end_level <= len(in_channels)
            assert num_outs == end_level - start_level
        self.start_level = start_level
        self.end_level = end_level

        self.extra_convs_on_inputs = extra_convs_on_inputs

        self.lateral_convs = nn.ModuleList()
        self.fpn_convs = nn.ModuleList()

        for i in range(self.start_level, self.backbone_end_level):
            l_conv = Conv2d( in_channels[i], out_channels,1,bn=bn, bias=not bn,same_padding=True)

            fpn_conv = Conv2d( out_channels, out_channels,3,bn=bn, bias=not bn,same_padding=True)

            self.lateral_convs.append(l_conv)
            self.fpn_convs.append(fpn_conv)

        # add extra conv layers (e.g., RetinaNet)
        self.init_weights()
    # default init_weights for conv(msra) and norm in ConvModule
    def init_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.xavier_uniform_(m.weight)


    def forward(self, inputs):

        assert len(inputs) == len(self.in_channels)

        # build laterals
        laterals = [lateral_conv(inputs[i + self.start_level]) for i, lateral_conv in enumerate(self.lateral_convs)]

        # build top-down path
        used_backbone_levels = len(laterals)
        for i in range(used_backbone_levels - 1, 0, -1):
            prev_shape = laterals[i - 1].shape[2:]
            laterals[i - 1] += F.interpolate(laterals[i], size=prev_shape, mode='nearest')  # error: IPL001

        # build outputs
        # part 1: from original levels
        outs = [ self.fpn_convs[i](laterals[i]) for i in range(used_backbone_levels) ]


        return tuple(outs)



class Conv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, NL='relu', same_padding=False, bn=True, bias=True):
        super(Conv2d, self).__init__()
        padding = int((kernel_size - 1) // 2) if same_padding else 0

        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding=padding, bias=bias)

        self.bn = nn.BatchNorm2d(out_channels) if bn else None
        if NL == 'relu' :
            self.relu = nn.ReLU(inplace=False)
        elif NL == 'prelu':
            self.relu = nn.PReLU()
        else:
            self.relu = None

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        if self.relu is not None:
            x = self.relu(x)  # saved-by
        return x


# ---- models/counters/MCC.py ----
class SCAModule(nn.Module):
    def __init__(self, inn, out):
        super(SCAModule, self).__init__()
        base = inn // 4
        self.conv_sa = nn.Sequential(MCCConv2d(inn, base, 3, same_padding=True, bias=False),
                                     SAM(base),
                                     MCCConv2d(base, base, 3, same_padding=True, bias=False)
                                     )
        self.conv_ca = nn.Sequential(MCCConv2d(inn, base, 3, same_padding=True, bias=False),
                                     CAM(base),
                                     MCCConv2d(base, base, 3, same_padding=True, bias=False)
                                     )
        self.conv_cat = MCCConv2d(base*2, out, 1, same_padding=True, bn=False)

    def forward(self, x):
        sa_feat = self.conv_sa(x)
        ca_feat = self.conv_ca(x)
        cat_feat = torch.cat((sa_feat,ca_feat),1)
        cat_feat = self.conv_cat(cat_feat)
        return cat_feat

class SAM(nn.Module):
    def __init__(self, channel):
        super(SAM, self).__init__()
        self.para_lambda = nn.Parameter(torch.zeros(1))
        self.query_conv = MCCConv2d(channel, channel//8, 1, NL='none')
        self.key_conv = MCCConv2d(channel, channel//8, 1, NL='none')
        self.value_conv = MCCConv2d(channel, channel, 1, NL='none')

    def forward(self, x):
        N, C, H, W = x.size()
        proj_query = self.query_conv(x).view(N, -1, W*H).permute(0, 2, 1)
        proj_key = self.key_conv(x).view(N, -1, W*H)
        energy = torch.bmm(proj_query, proj_key)
        attention = F.softmax(energy,dim=-1)
        proj_value = self.value_conv(x).view(N, -1, W*H)

        out = torch.bmm(proj_value, attention.permute(0, 2, 1))
        out = out.view(N, C, H, W)

        out = self.para_lambda*out + x
        return out

class CAM(nn.Module):
    def __init__(self, in_dim):
        super(CAM, self).__init__()
        self.para_mu = nn.Parameter(torch.zeros(1))

    def forward(self,x):
        N, C, H, W = x.size()
        proj_query = x.view(N, C, -1)
        proj_key = x.view(N, C, -1).permute(0, 2, 1)
        energy = torch.bmm(proj_query, proj_key)
        energy_new = torch.max(energy, -1, keepdim=True)[0].expand_as(energy)-energy
        attention = F.softmax(energy,dim=-1)
        proj_value = x.view(N, C, -1)

        out = torch.bmm(attention, proj_value)
        out = out.view(N, C, H, W)

        out = self.para_mu*out + x
        return out

class MCCConv2d(nn.Module):  # MCC.py's own Conv2d (named Conv2d there too)
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, NL='relu', same_padding=False, bn=True, bias=True):
        super(MCCConv2d, self).__init__()
        padding = int((kernel_size - 1) // 2) if same_padding else 0

        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding=padding, bias=bias)

        self.bn = nn.BatchNorm2d(out_channels) if bn else None
        if NL == 'relu' :
            self.relu = nn.ReLU(inplace=True)
        elif NL == 'prelu':
            self.relu = nn.PReLU()
        else:
            self.relu = None

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        if self.relu is not None:
            x = self.relu(x)
        return x



class MCC(nn.Module):
    '''
    Multi-channel Object Counting
    '''
    def __init__(self, num_class=6,  pretrained=True):
        super(MCC, self).__init__()
        self.seen = 0
        self.fusion = cfg.MM   #use nir
        if self.fusion:
            in_chans = 4
        else:
            in_chans = 3
        self.Extractor = ST(
                    in_chans= in_chans,
                    embed_dim=backbone['embed_dim'],
                    depths=backbone['depths'],
                    num_heads=backbone['num_heads'],
                    window_size=backbone['window_size'],
                    ape=backbone['ape'],
                    drop_path_rate=backbone['drop_path_rate'],
                    patch_norm=backbone['patch_norm'],
                    use_checkpoint=backbone['use_checkpoint'],
                    out_indices = backbone['out_indices'],
        )

        if pretrained:
            self.Extractor.init_weights(cfg.PRE_WEIGHTS)

        in_channels = cfg.MODEL_ARCH.decode_head.in_channels
        fpn_out_ch = 128

        self.neck = FPN(in_channels,fpn_out_ch,len(in_channels))
        self.project_in = len(in_channels) * fpn_out_ch
        self.project_out = 64
        self.reduce = nn.Conv2d(self.project_in, self.project_out, 1, 1)

        self.output_layer = SCAModule(self.project_out, 6)



    def forward(self,rgb, nir):
        '''
        rgb.shape = (b,3,h,w)
        nir.shape = (b,1,h,w)
        '''

        if self.fusion:
            x = torch.cat([rgb,nir], dim = 1)
        else:
            x = rgb

        x = self.Extractor(x)
        x = self.neck(x)
        x = torch.cat([F.interpolate(x[0],scale_factor=0.5), x[1],F.interpolate(x[2],scale_factor=2)], dim=1)
        x = self.reduce(x)
        x = self.output_layer(x)

        return x


# ---- misc/layer.py: Gaussianlayer (fixed Gaussian blur of the dot map) ----
class Gaussianlayer(nn.Module):
    def __init__(self, sigma=None, kernel_size=5):
        super(Gaussianlayer, self).__init__()
        if sigma == None:
            sigma = [1]
        g = np.exp(-((np.arange(kernel_size) - kernel_size // 2) ** 2) / (2 * sigma[0] ** 2))
        g = np.outer(g, g)
        g = g / g.sum()
        self.gaussian = nn.Conv2d(1, len(sigma), kernel_size, padding=kernel_size // 2, bias=False)
        self.gaussian.weight = nn.Parameter(torch.from_numpy(g).float().view(1, 1, kernel_size, kernel_size), requires_grad=False)

    def forward(self, dotmaps):
        denmaps = self.gaussian(dotmaps)
        return denmaps


class counters:
    class MCC:
        MCC = MCC


class layer:
    Gaussianlayer = Gaussianlayer


# ---- models/CC.py (the Mse_loss path) ----
class CrowdCounter(nn.Module):
    def __init__(self, net_name, gpu_id):
        super(CrowdCounter, self).__init__()


        self.net_name = net_name
        ccnet =  getattr(getattr(counters, net_name), net_name)

        gs_layer = getattr(layer, 'Gaussianlayer')

        self.MM = cfg.MM
        self.alpha = cfg.alpha
        self.CCN = ccnet()

        self.gs = gs_layer()

        if cfg.LOSS_FUNCTION == 'Mse_loss':
                self.loss_mse_fn = nn.MSELoss(reduction='mean')
        else:
            return 'error'


    @property
    def loss(self):
        return self.loss_fn

    def forward(self, data, num_class, iter = 0,  mode = 'train'):
        rgb, nir = data['rgb'], data['nir']
        nir = nir[:,0,:,:].unsqueeze(1)

        if self.net_name == 'MCC':
            pred_map = self.CCN(rgb,nir)
        else:
            pred_map = self.CCN(rgb)

        outputs = {
            'pred_map': pred_map}


        if mode == 'train':
            gt_map = data['gt_map'][:, :num_class, :, :]
            if cfg.LOSS_FUNCTION == 'Mse_loss':
                gauss_map = self.multi_class_gauss_map_generate(gt_map)
                self.loss_fn = self.build_mse_loss(pred_map, gauss_map)
                outputs['gauss_map'] = gauss_map
                return outputs
            else:
                return 'error'
        else:
            return outputs

    def build_mse_loss(self, pred_map, gauss_map):
        loss = self.loss_mse_fn(pred_map, gauss_map)
        return loss

    def multi_class_gauss_map_generate(self, gt_map):
        class_num = gt_map.shape[1]
        class_gauss_maps = []
        for i in range(class_num):
            class_gt_map = torch.unsqueeze(gt_map[:,i,:,:], 1)
            class_gauss_map = torch.squeeze(self.gs(class_gt_map), 1)
            class_gauss_maps.append(class_gauss_map)
        gauss_map = torch.stack(class_gauss_maps,1)
        return gauss_map


# ---- trainer.py (trimmed: no logger, timers, checkpoints or validation) ----
class Trainer():
    def __init__(self, cfg_data, train_loader):

        self.cfg_data = cfg_data
        self.train_loader = train_loader

        self.net_name = cfg.NET
        self.gpu_id = cfg.GPU_ID

        self.net = CrowdCounter(self.net_name, self.gpu_id)

        self.categorys = self.cfg_data.CATEGORYS
        self.num_classes = len(self.categorys)

        if cfg.BACKBONE_FREEZE:
            self.optimizer = optim.AdamW([
                {'params': [param for name, param in self.net.named_parameters() if 'backbone' in name], 'lr': cfg.CONV_LR, 'weight_decay': cfg.WEIGHT_DECAY},
                {'params': [param for name, param in self.net.named_parameters() if 'backbone' not in name], 'lr': cfg.BASE_LR, 'weight_decay': cfg.WEIGHT_DECAY},
            ])
        else:
            self.optimizer = optim.AdamW(self.net.parameters(), lr=cfg.BASE_LR, weight_decay=cfg.WEIGHT_DECAY)

        self.epoch = 0
        self.i_tb = 0
        self.train_loss_avg = 0

    def forward(self):
        for epoch in range(self.epoch,cfg.MAX_EPOCH):
            self.epoch = epoch
            self.train()
            print( '='*20 )

    def train(self): # training for all datasets

        self.net.train()

        losses = []

        for it, data in enumerate(self.train_loader, 0):
            self.i_tb += 1

            num_class = self.num_classes
            rgb, nir, gt_map = data['rgb'], data['nir'], data['gt_map'][:, :num_class, :, :]

            self.optimizer.zero_grad()

            outputs = self.net(data, num_class, it)
            pred_map = outputs['pred_map']
            gauss_map = outputs['gauss_map']

            loss = self.net.loss
            loss.backward()
            self.optimizer.step()

            losses.append(loss.item())

            if (it + 1) % cfg.PRINT_FREQ == 0:
                print( '[ep %d][it %d][loss %.4f][base_lr %.8f]' % \
                        (self.epoch + 1, it + 1, loss.item(), self.optimizer.param_groups[0]['lr']) )
                for c_idx in range(self.num_classes):
                    print( '       ', self.categorys[c_idx],':  [cnt: gt: %.1f pred: %.2f]' % (gt_map[0][c_idx].sum().data/self.cfg_data.LOG_PARA, pred_map[0][c_idx].sum().data/self.cfg_data.LOG_PARA) )

        self.train_loss_avg = sum(losses) / len(losses)


if __name__ == '__main__':
    torch.manual_seed(cfg.SEED)
    cfg_data = edict(CATEGORYS=['ship', 'vehicle', 'person', 'building', 'tree', 'container'], LOG_PARA=100.)
    # random 64x64 tiles instead of the MOC_RS loader; density maps at stride 8
    train_loader = [
        {'rgb': torch.rand(2, 3, 64, 64), 'nir': torch.rand(2, 3, 64, 64),
         'gt_map': (torch.rand(2, 6, 8, 8) > 0.9).float() * cfg_data.LOG_PARA}
        for _ in range(2)
    ]
    cc_trainer = Trainer(cfg_data, train_loader)
    cc_trainer.forward()
