"""Zero-Restore's underwater model: SKConv collects its branches with `fea = conv(x).unsqueeze_(dim=1)`; for the first branch `conv(x)` is the output of InConv's final ReLU, which that ReLU saved for backward, so the in-place unsqueeze_ bumps it and backward fails."""
# outcome: inplace-error
# source: https://github.com/aupendu/zero-restore/issues/7
# repo: aupendu/zero-restore
# category: residual
# twin: 804_zero_restore_skconv_unsqueeze_relu_output_fixed.py
import torch
import torch.nn as nn
import torch.nn.functional as F
import numpy as np

import math
import random
import sys


# ---- model/watermodel.py ----
def make_model():
	return MainModel()


class DoubleConv(nn.Module):
	def __init__(self, in_ch, out_ch):
		super(DoubleConv, self).__init__()
		self.conv = nn.Sequential(
			nn.Conv2d(in_ch, out_ch, 3, padding=1, bias=False, padding_mode='reflect'),
			nn.GroupNorm(num_channels=out_ch, num_groups=8, affine=True),
			nn.ReLU(inplace=True),
			nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False, padding_mode='reflect'),
			nn.GroupNorm(num_channels=out_ch, num_groups=8, affine=True),
			nn.ReLU(inplace=True)
		)
	def forward(self, x):
		x = self.conv(x)
		return x


class InDoubleConv(nn.Module):
	def __init__(self, in_ch, out_ch):
		super(InDoubleConv, self).__init__()
		self.conv = nn.Sequential(
			nn.Conv2d(in_ch, out_ch, 9, stride=4, padding=4, bias=False, padding_mode='reflect'),
			nn.GroupNorm(num_channels=out_ch, num_groups=8, affine=True),
			nn.ReLU(inplace=True),
			nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False, padding_mode='reflect'),
			nn.GroupNorm(num_channels=out_ch, num_groups=8, affine=True),
			nn.ReLU(inplace=True)
		)
	def forward(self, x):
		x = self.conv(x)
		return x


class InConv(nn.Module):
	def __init__(self, in_ch, out_ch):
		super(InConv, self).__init__()
		self.conv = nn.Sequential(
			nn.Conv2d(1, 64, 7, stride = 4, padding=3,  bias=False, padding_mode='reflect'),
			nn.GroupNorm(num_channels=64, num_groups=8, affine=True),
			nn.ReLU(inplace=True)
		)
		self.convf = nn.Sequential(
			nn.Conv2d(64, 64, 3, padding=1, bias=False, padding_mode='reflect'),
			nn.GroupNorm(num_channels=64, num_groups=8, affine=True),
			nn.ReLU(inplace=False)
		)
	def forward(self, x):
		R = x[:, 0:1, :, :]
		G = x[:, 1:2, :, :]
		B = x[:, 2:3, :, :]
		xR = torch.unsqueeze(self.conv(R), 1)
		xG = torch.unsqueeze(self.conv(G), 1)
		xB = torch.unsqueeze(self.conv(B), 1)
		x = torch.cat([xR, xG, xB], 1)
		x, _ = torch.min(x, dim=1)
		return self.convf(x)  # saved-by

class SKConv(nn.Module):
    def __init__(self, outfeatures=64, infeatures=1, M=4 ,L=32):

        super(SKConv, self).__init__()
        self.M = M
        self.convs = nn.ModuleList([])
        in_conv = InConv(in_ch=infeatures, out_ch=outfeatures)
        for i in range(M):
        	if i==0:
        		self.convs.append(in_conv)
        	else:
	            self.convs.append(nn.Sequential(
	            	nn.Upsample(scale_factor=1/(2**i), mode='bilinear', align_corners=True),
	                in_conv,
	                nn.Upsample(scale_factor=2**i, mode='bilinear', align_corners=True)
	            ))
        self.fc = nn.Linear(outfeatures, L)
        self.fcs = nn.ModuleList([])
        for i in range(M):
            self.fcs.append(
                nn.Linear(L, outfeatures)
            )
        self.softmax = nn.Softmax(dim=1)
        
    def forward(self, x):
        for i, conv in enumerate(self.convs):
            fea = conv(x).unsqueeze_(dim=1)  # error: IPL001
            if i == 0:
                feas = fea
            else:
                feas = torch.cat([feas, fea], dim=1)
        fea_U = torch.sum(feas, dim=1)
        fea_s = fea_U.mean(-1).mean(-1)
        fea_z = self.fc(fea_s)
        for i, fc in enumerate(self.fcs):
            vector = fc(fea_z).unsqueeze_(dim=1)
            if i == 0:
                attention_vectors = vector
            else:
                attention_vectors = torch.cat([attention_vectors, vector], dim=1)
        attention_vectors = self.softmax(attention_vectors)
        attention_vectors = attention_vectors.unsqueeze(-1).unsqueeze(-1)
        fea_v = (feas * attention_vectors).sum(dim=1)
        return fea_v

class estimation(nn.Module):
	def __init__(self):
		super(estimation, self).__init__()
				
		self.InConv = SKConv(outfeatures=64, infeatures=1, M=3 ,L=32)

		self.convt = DoubleConv(64, 64)
		self.OutConv = nn.Conv2d(64, 3, 3, padding = 1, stride=1, bias=False, padding_mode='reflect')
		self.up = nn.Upsample(scale_factor=4, mode='bilinear', align_corners=True)

		self.conv1 = InDoubleConv(3, 64)
		self.conv1X = InDoubleConv(3, 64)
		self.conv2 = DoubleConv(64, 64)
		self.maxpool = nn.MaxPool2d(15, 7)
		
		self.pool = nn.AdaptiveAvgPool2d(1)
		self.dense = nn.Linear(64, 3, bias=False)
		
		
	def forward(self, x):

		xmin = self.InConv(x)

		trans = self.conv1X(x)
		trans = torch.mul(trans, xmin)
		trans = self.OutConv(self.up(self.convt(xmin)))
		trans = torch.sigmoid(trans) + 1e-12

		atm = self.conv1(x)
		atm = torch.mul(atm, xmin)
		atm = self.pool(self.conv2(self.maxpool(atm)))
		atm = atm.view(-1, 64)
		atm = torch.sigmoid(self.dense(atm))
		
		return trans, atm


class MainModel(nn.Module):
	def __init__(self):
		super().__init__()
				
		self.estimation = estimation()		
		
	def forward(self, x):

		trans, atm = self.estimation(x)

		atm = torch.unsqueeze(torch.unsqueeze(atm, 2), 2)
		atm = atm.expand_as(x)

		out = (x - (1 - trans)*atm)/trans
		
		return trans, atm, out


# ---- model/__init__.py ----
class Model(nn.Module):
    def __init__(self, modelname):
        super(Model, self).__init__()
        
        print('Making model...')
        
        self.model = make_model()  # import_module('model.' + modelname).make_model()

    def forward(self, x):
        return self.model(x)


# ---- UnderWaterZeroShot.py (one random 96x96 image instead of the U45 folder, 2 iterations, no saving) ----
torch.manual_seed(1)
np.random.seed(1)
random.seed(1)

def weights_init(m):
	classname = m.__class__.__name__
	if classname.find('Conv2d') != -1: 
		m.weight.data.normal_(0.0, 0.001)
	if classname.find('Linear') != -1: 
		m.weight.data.normal_(0.0, 0.001)

class I_TV(nn.Module):
	def __init__(self):
		super(I_TV,self).__init__()
		pass

	def forward(self,x):
		batch_size, h_x, w_x = x.size()[0], x.size()[2], x.size()[3]
		count_h, count_w = (h_x-1) * w_x, h_x * (w_x - 1)
		h_tv = torch.pow((x[:,:,1:,:]-x[:,:,:h_x-1,:]),2).sum()
		w_tv = torch.pow((x[:,:,:,1:]-x[:,:,:,:w_x-1]),2).sum()
		return (h_tv/count_h+w_tv/count_w)/batch_size


class L_color(nn.Module):
	def __init__(self):
		super(L_color, self).__init__()

	def forward(self, x):
		mean_rgb = torch.mean(x,[2,3],keepdim=True)
		mr,mg, mb = torch.split(mean_rgb, 1, dim=1)
		Drg = torch.pow(mr-mg,2)
		Drb = torch.pow(mr-mb,2)
		Dgb = torch.pow(mb-mg,2)
		k = torch.pow(torch.pow(Drg,2) + torch.pow(Drb,2) + torch.pow(Dgb,2),0.5)
		return k

def _augment(_image):
	it = random.randint(0, 7)
	if it==1: _image = _image.rot90(1, [2, 3])
	if it==2: _image = _image.rot90(2, [2, 3])
	if it==3: _image = _image.rot90(3, [2, 3])
	if it==4: _image = _image.flip(2).rot90(1, [2, 3])
	if it==5: _image = _image.flip(3).rot90(1, [2, 3])
	if it==6: _image = _image.flip(2)
	if it==7: _image = _image.flip(3)
	return _image


_color = L_color()
_img_TV = I_TV()
itr_no = 2

def test():
	_model = Model('watermodel')
	_model.apply(weights_init)
	optimizer = torch.optim.Adam(_model.parameters(), lr=1e-3, betas=(0.99, 0.999), eps=1e-08, weight_decay=1e-2)

	Input = torch.rand(1, 3, 96, 96)

	H, W = Input.shape[2], Input.shape[3]
	H, W = H - H%32, W - W%32
	Input = Input[:, :, 0:H, 0:W]

	Ig = torch.mean(Input[0, 1, :, :])
	Ir = torch.mean(Input[0, 0, :, :])

	Input[0, 0, :, :] = Input[0, 0, :, :] + (Ig - Ir)*(1 - Input[0, 0, :, :])*Input[0, 1, :, :]
	Input = torch.clamp(Input, 0, 1)

	for k in range(itr_no):
		_model.train()

		Inputmage = _augment(Input)

		optimizer.zero_grad()

		trans_map, atm_map, HazefreeImage = _model(Inputmage)

		px = 0.9
		_trans_map = px
		InputmageX = Inputmage*_trans_map + (1 - _trans_map)*atm_map
		trans_mapX, atm_mapX, HazefreeImageX = _model(InputmageX)

		otensor = torch.ones(HazefreeImage.shape)
		ztensor = torch.zeros(HazefreeImage.shape)

		lossT = torch.sum(torch.abs(trans_mapX - px*trans_map)) 
	
		lossMx = torch.sum(torch.max(HazefreeImage, otensor)) + torch.sum(torch.max(HazefreeImageX, otensor)) - 2*torch.sum(otensor) 
		lossMn = - torch.sum(torch.min(HazefreeImage, ztensor)) - torch.sum(torch.min(HazefreeImageX, ztensor))

		lossCLR = _color(HazefreeImage)
		lossA = torch.sum((atm_map - atm_mapX)**2)
		lossI = _img_TV(HazefreeImage)

		loss =   1000*lossCLR + lossT + lossA + 0.001*lossMx + 0.001*lossMn + 0.001*lossI 

		loss.backward()
		optimizer.step()
		print(k, loss.item())


test()
