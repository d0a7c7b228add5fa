"""train_mvod_lstm5.py as fixed in the thread: net.detach_hidden() moves into the per-frame loop, so each frame's backward stops at the detached hidden and cell states."""
# outcome: ok
# source: https://github.com/vikrant7/mobile-vod-bottleneck-lstm/issues/25
# repo: vikrant7/mobile-vod-bottleneck-lstm
# category: iteration
# twin: 100_mvod_bottleneck_lstm_detach_after_sequence.py
import argparse
import os
import logging
import sys
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

DEVICE = torch.device("cpu")


# ---- utils/box_utils.py (the part used here) ----
def hard_negative_mining(loss, labels, neg_pos_ratio):
	pos_mask = labels > 0
	num_pos = pos_mask.long().sum(dim=1, keepdim=True)
	num_neg = num_pos * neg_pos_ratio

	loss[pos_mask] = -math.inf
	_, indexes = loss.sort(dim=1, descending=True)
	_, orders = indexes.sort(dim=1)
	neg_mask = orders < num_neg
	return pos_mask | neg_mask


# ---- network/multibox_loss.py ----
class MultiboxLoss(nn.Module):
	def __init__(self, priors, iou_threshold, neg_pos_ratio,
				 center_variance, size_variance, device):
		"""Implement SSD Multibox Loss.

		Basically, Multibox loss combines classification loss
		 and Smooth L1 regression loss.
		"""
		super(MultiboxLoss, self).__init__()
		self.iou_threshold = iou_threshold
		self.neg_pos_ratio = neg_pos_ratio
		self.center_variance = center_variance
		self.size_variance = size_variance
		self.priors = priors
		self.priors.to(device)

	def forward(self, confidence, predicted_locations, labels, gt_locations):
		num_classes = confidence.size(2)
		with torch.no_grad():
			# derived from cross_entropy=sum(log(p))
			loss = -F.log_softmax(confidence, dim=2)[:, :, 0]
			mask = hard_negative_mining(loss, labels, self.neg_pos_ratio)

		confidence = confidence[mask, :]
		classification_loss = F.cross_entropy(confidence.reshape(-1, num_classes), labels[mask], reduction='sum')
		pos_mask = labels > 0
		predicted_locations = predicted_locations[pos_mask, :].reshape(-1, 4)
		gt_locations = gt_locations[pos_mask, :].reshape(-1, 4)
		smooth_l1_loss = F.smooth_l1_loss(predicted_locations, gt_locations, reduction='sum')
		num_pos = gt_locations.size(0)
		return smooth_l1_loss/num_pos, classification_loss/num_pos


# ---- network/mvod_lstm5.py ----
def SeperableConv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0):
	return nn.Sequential(
		nn.Conv2d(in_channels=int(in_channels), out_channels=int(in_channels), kernel_size=kernel_size,
			   groups=int(in_channels), stride=stride, padding=padding),
		nn.ReLU6(),
		nn.Conv2d(in_channels=int(in_channels), out_channels=int(out_channels), kernel_size=1),
	)

def conv_bn(inp, oup, stride):
	return nn.Sequential(
				nn.Conv2d(int(inp), int(oup), 3, stride, 1, bias=False),
				nn.BatchNorm2d(int(oup)),
				nn.ReLU6(inplace=True)
			)
def conv_dw(inp, oup, stride):
	return nn.Sequential(
				nn.Conv2d(int(inp), int(inp), 3, stride, 1, groups=int(inp), bias=False),
				nn.BatchNorm2d(int(inp)),
				nn.ReLU6(inplace=True),

				nn.Conv2d(int(inp), int(oup), 1, 1, 0, bias=False),
				nn.BatchNorm2d(int(oup)),
				nn.ReLU6(inplace=True),
			)

class BottleneckLSTMCell(nn.Module):
	def __init__(self, input_channels, hidden_channels):
		super(BottleneckLSTMCell, self).__init__()

		assert hidden_channels % 2 == 0

		self.input_channels = int(input_channels)
		self.hidden_channels = int(hidden_channels)
		self.num_features = 4
		self.W = nn.Conv2d(in_channels=self.input_channels, out_channels=self.input_channels, kernel_size=3, groups=self.input_channels, stride=1, padding=1)
		self.Wy  = nn.Conv2d(int(self.input_channels+self.hidden_channels), self.hidden_channels, kernel_size=1)
		self.Wi  = nn.Conv2d(self.hidden_channels, self.hidden_channels, 3, 1, 1, groups=self.hidden_channels, bias=False)
		self.Wbi = nn.Conv2d(self.hidden_channels, self.hidden_channels, 1, 1, 0, bias=False)
		self.Wbf = nn.Conv2d(self.hidden_channels, self.hidden_channels, 1, 1, 0, bias=False)
		self.Wbc = nn.Conv2d(self.hidden_channels, self.hidden_channels, 1, 1, 0, bias=False)
		self.Wbo = nn.Conv2d(self.hidden_channels, self.hidden_channels, 1, 1, 0, bias=False)

		self.Wci = None
		self.Wcf = None
		self.Wco = None
		logging.info("Initializing weights of lstm")
		self._initialize_weights()

	def _initialize_weights(self):
		for m in self.modules():
			if isinstance(m, nn.Conv2d):
				n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
				m.weight.data.normal_(0, math.sqrt(2. / n))
				if m.bias is not None:
					m.bias.data.zero_()
			elif isinstance(m, nn.BatchNorm2d):
				m.weight.data.fill_(1)
				m.bias.data.zero_()

	def forward(self, x, h, c): #implemented as mentioned in paper here the only difference is  Wbi, Wbf, Wbc & Wbo are commuted all together in paper
		x = self.W(x)
		y = torch.cat((x, h),1) #concatenate input and hidden layers
		i = self.Wy(y) #reduce to hidden layer size
		b = self.Wi(i)	#depth wise 3*3
		ci = torch.sigmoid(self.Wbi(b) + c * self.Wci)
		cf = torch.sigmoid(self.Wbf(b) + c * self.Wcf)
		cc = cf * c + ci * torch.relu(self.Wbc(b))
		co = torch.sigmoid(self.Wbo(b) + cc * self.Wco)
		ch = co * torch.relu(cc)
		return ch, cc

	def init_hidden(self, batch_size, hidden, shape):
		if self.Wci is None:
			self.Wci = Variable(torch.zeros(1, hidden, shape[0], shape[1])).to(DEVICE)
			self.Wcf = Variable(torch.zeros(1, hidden, shape[0], shape[1])).to(DEVICE)
			self.Wco = Variable(torch.zeros(1, hidden, shape[0], shape[1])).to(DEVICE)
		else:
			assert shape[0] == self.Wci.size()[2], 'Input Height Mismatched!'
			assert shape[1] == self.Wci.size()[3], 'Input Width Mismatched!'
		return (Variable(torch.zeros(batch_size, hidden, shape[0], shape[1])).to(DEVICE),
				Variable(torch.zeros(batch_size, hidden, shape[0], shape[1])).to(DEVICE)
				)

class BottleneckLSTM(nn.Module):
	def __init__(self, input_channels, hidden_channels, height, width, batch_size):
		super(BottleneckLSTM, self).__init__()
		self.input_channels = int(input_channels)
		self.hidden_channels = int(hidden_channels)
		self.cell = BottleneckLSTMCell(self.input_channels, self.hidden_channels)
		(h, c) = self.cell.init_hidden(batch_size, hidden=self.hidden_channels, shape=(height, width))
		self.hidden_state = h
		self.cell_state = c

	def forward(self, input):
		new_h, new_c = self.cell(input, self.hidden_state, self.cell_state)
		self.hidden_state = new_h
		self.cell_state = new_c
		return self.hidden_state


class MobileNetV1(nn.Module):
	def __init__(self, num_classes=1024, alpha=1):
		super(MobileNetV1, self).__init__()
		# upto conv 12
		self.model = nn.Sequential(
			conv_bn(3, 32*alpha, 2),
			conv_dw(32*alpha, 64*alpha, 1),
			conv_dw(64*alpha, 128*alpha, 2),
			conv_dw(128*alpha, 128*alpha, 1),
			conv_dw(128*alpha, 256*alpha, 2),
			conv_dw(256*alpha, 256*alpha, 1),
			conv_dw(256*alpha, 512*alpha, 2),
			conv_dw(512*alpha, 512*alpha, 1),
			conv_dw(512*alpha, 512*alpha, 1),
			conv_dw(512*alpha, 512*alpha, 1),
			conv_dw(512*alpha, 512*alpha, 1),
			conv_dw(512*alpha, 512*alpha, 1),
			)
		logging.info("Initializing weights of base net")
		self._initialize_weights()
	def _initialize_weights(self):
		for m in self.modules():
			if isinstance(m, nn.Conv2d):
				n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
				m.weight.data.normal_(0, math.sqrt(2. / n))
				if m.bias is not None:
					m.bias.data.zero_()
			elif isinstance(m, nn.BatchNorm2d):
				m.weight.data.fill_(1)
				m.bias.data.zero_()

	def forward(self, x):
		x = self.model(x)
		return x


class SSD(nn.Module):
	def __init__(self,num_classes, batch_size, alpha = 1, is_test=False, config = None):
		super(SSD, self).__init__()
		# Decoder
		self.is_test = is_test
		self.config = config
		self.num_classes = num_classes
		self.conv13 = conv_dw(512*alpha, 1024*alpha, 2) #not using conv14 as mentioned in paper
		self.bottleneck_lstm1 = BottleneckLSTM(input_channels=1024*alpha, hidden_channels=256*alpha, height=2, width=2, batch_size=batch_size)
		self.fmaps_1 = nn.Sequential(
			nn.Conv2d(in_channels=int(256*alpha), out_channels=int(128*alpha), kernel_size=1),
			nn.ReLU(inplace=True),
			SeperableConv2d(in_channels=128*alpha, out_channels=256*alpha, kernel_size=3, stride=2, padding=1),
		)
		self.bottleneck_lstm2 = BottleneckLSTM(input_channels=256*alpha, hidden_channels=64*alpha, height=1, width=1, batch_size=batch_size)
		self.fmaps_2 = nn.Sequential(
			nn.Conv2d(in_channels=int(64*alpha), out_channels=int(32*alpha), kernel_size=1),
			nn.ReLU(inplace=True),
			SeperableConv2d(in_channels=32*alpha, out_channels=64*alpha, kernel_size=3, stride=2, padding=1),
		)
		self.bottleneck_lstm3 = BottleneckLSTM(input_channels=64*alpha, hidden_channels=16*alpha, height=1, width=1, batch_size=batch_size)
		self.fmaps_3 = nn.Sequential(
			nn.Conv2d(in_channels=int(16*alpha), out_channels=int(8*alpha), kernel_size=1),
			nn.ReLU(inplace=True),
			SeperableConv2d(in_channels=8*alpha, out_channels=16*alpha, kernel_size=3, stride=2, padding=1),
		)
		self.lstm4 = BottleneckLSTM(input_channels=16*alpha, hidden_channels=16*alpha, height=1, width=1, batch_size=batch_size)
		self.fmaps_4 = nn.Sequential(
			nn.Conv2d(in_channels=int(16*alpha), out_channels=int(8*alpha), kernel_size=1),
			nn.ReLU(inplace=True),
			SeperableConv2d(in_channels=8*alpha, out_channels=16*alpha, kernel_size=3, stride=2, padding=1),
		)
		self.lstm5 = BottleneckLSTM(input_channels=16*alpha, hidden_channels=16*alpha, height=1, width=1, batch_size=batch_size)
		self.regression_headers = nn.ModuleList([
		SeperableConv2d(in_channels=512*alpha, out_channels=6 * 4, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=256*alpha, out_channels=6 * 4, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=64*alpha, out_channels=6 * 4, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=16*alpha, out_channels=6 * 4, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=16*alpha, out_channels=6 * 4, kernel_size=3, padding=1),
		nn.Conv2d(in_channels=int(16*alpha), out_channels=6 * 4, kernel_size=1),
		])

		self.classification_headers = nn.ModuleList([
		SeperableConv2d(in_channels=512*alpha, out_channels=6 * num_classes, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=256*alpha, out_channels=6 * num_classes, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=64*alpha, out_channels=6 * num_classes, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=16*alpha, out_channels=6 * num_classes, kernel_size=3, padding=1),
		SeperableConv2d(in_channels=16*alpha, out_channels=6 * num_classes, kernel_size=3, padding=1),
		nn.Conv2d(in_channels=int(16*alpha), out_channels=6 * num_classes, kernel_size=1),
		])

		logging.info("Initializing weights of ssd")
		self._initialize_weights()

	def _initialize_weights(self):
		for m in self.modules():
			if isinstance(m, nn.Conv2d):
				n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
				m.weight.data.normal_(0, math.sqrt(2. / n))
				if m.bias is not None:
					m.bias.data.zero_()
			elif isinstance(m, nn.BatchNorm2d):
				m.weight.data.fill_(1)
				m.bias.data.zero_()

	def compute_header(self, i, x): #ssd method to calculate headers
		confidence = self.classification_headers[i](x)
		confidence = confidence.permute(0, 2, 3, 1).contiguous()
		confidence = confidence.view(confidence.size(0), -1, self.num_classes)

		location = self.regression_headers[i](x)
		location = location.permute(0, 2, 3, 1).contiguous()
		location = location.view(location.size(0), -1, 4)

		return confidence, location

	def forward(self, x):
		confidences = []
		locations = []
		header_index=0
		confidence, location = self.compute_header(header_index, x)
		header_index += 1
		confidences.append(confidence)
		locations.append(location)
		x = self.conv13(x)
		x = self.bottleneck_lstm1(x)
		confidence, location = self.compute_header(header_index, x)
		header_index += 1
		confidences.append(confidence)
		locations.append(location)
		x = self.fmaps_1(x)
		x=self.bottleneck_lstm2(x)
		confidence, location = self.compute_header(header_index, x)
		header_index += 1
		confidences.append(confidence)
		locations.append(location)
		x = self.fmaps_2(x)
		x=self.bottleneck_lstm3(x)
		confidence, location = self.compute_header(header_index, x)
		header_index += 1
		confidences.append(confidence)
		locations.append(location)
		x = self.fmaps_3(x)
		x = self.lstm4(x)
		confidence, location = self.compute_header(header_index, x)
		header_index += 1
		confidences.append(confidence)
		locations.append(location)
		x = self.fmaps_4(x)
		x = self.lstm5(x)
		confidence, location = self.compute_header(header_index, x)
		header_index += 1
		confidences.append(confidence)
		locations.append(location)
		confidences = torch.cat(confidences, 1)
		locations = torch.cat(locations, 1)
		return confidences, locations

class MobileVOD(nn.Module):
	def __init__(self, pred_enc, pred_dec):
		super(MobileVOD, self).__init__()
		self.pred_encoder = pred_enc
		self.pred_decoder = pred_dec

	def forward(self, seq):
		x = self.pred_encoder(seq)
		confidences, locations = self.pred_decoder(x)
		return confidences , locations

	def detach_hidden(self):
		"""
		Detaches hidden state and cell state of all the LSTM layers from the graph
		"""
		self.pred_decoder.bottleneck_lstm1.hidden_state.detach_()
		self.pred_decoder.bottleneck_lstm1.cell_state.detach_()
		self.pred_decoder.bottleneck_lstm2.hidden_state.detach_()
		self.pred_decoder.bottleneck_lstm2.cell_state.detach_()
		self.pred_decoder.bottleneck_lstm3.hidden_state.detach_()
		self.pred_decoder.bottleneck_lstm3.cell_state.detach_()
		self.pred_decoder.lstm4.hidden_state.detach_()
		self.pred_decoder.lstm4.cell_state.detach_()
		self.pred_decoder.lstm5.hidden_state.detach_()
		self.pred_decoder.lstm5.cell_state.detach_()


# ---- a few random video clips instead of the ImageNet VID loader ----
NUM_PRIORS = 6 * (4 * 4 + 2 * 2 + 1 + 1 + 1 + 1)


def fake_vid_loader(num_clips, sequence_length, batch_size, num_classes):
	for _ in range(num_clips):
		images = [torch.randn(batch_size, 3, 64, 64) for _ in range(sequence_length)]
		boxes = [torch.randn(batch_size, NUM_PRIORS, 4) for _ in range(sequence_length)]
		labels = [torch.randint(0, num_classes, (batch_size, NUM_PRIORS)) for _ in range(sequence_length)]
		yield images, boxes, labels


# ---- train_mvod_lstm5.py ----
parser = argparse.ArgumentParser(
	description='Mobile Video Object Detection (Bottleneck LSTM) Training With Pytorch')
parser.add_argument('--width_mult', default=0.125, type=float,
					help='Width Multiplifier')
parser.add_argument('--lr', '--learning-rate', default=0.003, type=float,
					help='initial learning rate')
parser.add_argument('--momentum', default=0.9, type=float,
					help='Momentum value for optim')
parser.add_argument('--weight_decay', default=5e-4, type=float,
					help='Weight decay for SGD')
parser.add_argument('--base_net_lr', default=None, type=float,
					help='initial learning rate for base net.')
parser.add_argument('--ssd_lr', default=None, type=float,
					help='initial learning rate for the layers not in base net and prediction heads.')
parser.add_argument('--batch_size', default=1, type=int,
					help='Batch size for training')
parser.add_argument('--num_epochs', default=1, type=int,
					help='the number epochs')
parser.add_argument('--debug_steps', default=100, type=int,
					help='Set the debug log output frequency.')
parser.add_argument('--sequence_length', default=2, type=int,
					help='sequence_length of video to unfold')

logging.basicConfig(stream=sys.stdout, level=logging.WARNING,
					format='%(asctime)s - %(name)s - %(levelname)s - %(message)s')
args = parser.parse_args([])


def train(loader, net, criterion, optimizer, device, debug_steps=100, epoch=-1, sequence_length=10):
	net.train(True)
	running_loss = 0.0
	running_regression_loss = 0.0
	running_classification_loss = 0.0
	for i, data in enumerate(loader):
		images, boxes, labels = data
		for image, box, label in zip(images, boxes, labels):
			image = image.to(device)
			box = box.to(device)
			label = label.to(device)

			optimizer.zero_grad()
			confidence, locations = net(image)
			regression_loss, classification_loss = criterion(confidence, locations, label, box)  # TODO CHANGE BOXES
			loss = regression_loss + classification_loss
			loss.backward(retain_graph=True)
			optimizer.step()

			running_loss += loss.item()
			running_regression_loss += regression_loss.item()
			running_classification_loss += classification_loss.item()
			net.detach_hidden()
		if i and i % debug_steps == 0:
			avg_loss = running_loss / (debug_steps*sequence_length)
			logging.info(f"Epoch: {epoch}, Step: {i}, Average Loss: {avg_loss:.4f}")
			running_loss = 0.0
			running_regression_loss = 0.0
			running_classification_loss = 0.0
	net.detach_hidden()


if __name__ == '__main__':
	num_classes = 31
	pred_enc = MobileNetV1(num_classes=num_classes, alpha = args.width_mult)
	pred_dec = SSD(num_classes=num_classes, batch_size = args.batch_size, alpha = args.width_mult, is_test=False)
	net = MobileVOD(pred_enc, pred_dec)

	base_net_lr = args.base_net_lr if args.base_net_lr is not None else args.lr
	ssd_lr = args.ssd_lr if args.ssd_lr is not None else args.lr

	net.to(DEVICE)

	priors = torch.rand(NUM_PRIORS, 4)
	criterion = MultiboxLoss(priors, iou_threshold=0.5, neg_pos_ratio=3,
							 center_variance=0.1, size_variance=0.2, device=DEVICE)
	optimizer = torch.optim.RMSprop([{'params': [param for name, param in net.pred_encoder.named_parameters()], 'lr': base_net_lr},
		{'params': [param for name, param in net.pred_decoder.named_parameters()], 'lr': ssd_lr},], lr=args.lr, momentum=args.momentum,
								weight_decay=args.weight_decay)
	last_epoch = -1
	for epoch in range(last_epoch + 1, args.num_epochs):
		train(fake_vid_loader(2, args.sequence_length, args.batch_size, num_classes), net, criterion, optimizer,
			  device=DEVICE, debug_steps=args.debug_steps, epoch=epoch, sequence_length=args.sequence_length)
