"""DP-NeRF (deblurring NeRF with a rigid blurring kernel): SE3Field.warp takes `theta = torch.linalg.norm(rot, axis=-1)` and then does `theta += 1.0e-10`, writing into the norm's output, which the norm saved for its backward."""
# outcome: inplace-error
# source: https://github.com/dogyoonlee/DP-NeRF/issues/2
# repo: dogyoonlee/DP-NeRF
# category: residual
# twin: 998_dp_nerf_se3_warp_theta_norm_iadd_fixed.py
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- utils/rigid_warping.py ----
class SE3Field():
    """
        warp the given points with rotation(r) and translation(v) value.
        
        input: 
        
        output:
    """
    def __init__(self):
        super(SE3Field, self).__init__()
        self.rigid_body = Rigid_body()
        
    # def warp(self, pts, rot, trans, adj_pts_use=False):
    def warp(self, pts, rot, trans):
        '''
            one sample:
                        pts: N_rays*N_samples x 3
                        rot: N_rays*N_samples x 3
                        trans: N_rays*N_samples x 3
            adj sample:
                        pts: N_rays*N_samples x (N_adjs+1) x 3
                        rot: N_rays*N_samples x 3
                        trans: N_rays*N_samples x 3
        '''
        theta = torch.linalg.norm(rot, axis=-1) # N_rays*N_samples  # saved-by
        theta += 1.0e-10  # error: IPL001
        rot = rot / theta.unsqueeze(-1) # N_rays*N_samples x 3
        trans = trans / theta.unsqueeze(-1) # N_rays*N_samples x 3
        screw_axis = torch.cat([rot, trans], axis=-1) # N_rays*N_samples x 6
        transform = self.rigid_body.exp_se3(screw_axis, theta) # N_rays*N_samples x 4 x 4
        
        # if adj_pts_use:
        #     warped_pts = torch.matmul(transform.unsqueeze(1), self.rigid_body.to_homogenous(pts)[..., None]).squeeze(-1)
        # else:
        #     warped_pts = torch.matmul(transform, self.rigid_body.to_homogenous(pts)[..., None]).squeeze(-1)
        
        warped_pts = torch.matmul(transform, self.rigid_body.to_homogenous(pts)[..., None]).squeeze(-1)
        warped_pts = self.rigid_body.from_homogenous(warped_pts)
        return warped_pts



class Rigid_body():
    def __init__(self):
        super(Rigid_body, self).__init__()  
          
    def exp_se3(self, S, theta):
        ''' 
            Exponential map from Lie algebra so3 to Lie group SO3.

            Modern Robotics Eqn 3.88.

            Args:
                S: (6,) A screw axis of motion.
                theta: Magnitude of motion.

            Returns:
                a_X_b: (4, 4) The homogeneous transformation matrix attained by integrating
                motion of magnitude theta about S for one second.
        '''
        # w, v = torch.split(S, 2)
        w, v = torch.split(S, [3, 3], dim=-1)
        W =self.skew(w)
        R = self.exp_so3(w, theta) 
        theta = theta[..., None, None]
        p = torch.matmul((theta * torch.eye(3)[None, ...] + (1.0 - torch.cos(theta)) * W +
                          (theta - torch.sin(theta)) * torch.matmul(W, W)), v[..., None])
        return self.rp_to_se3(R, p)
    
    def exp_so3(self, w, theta):
        """Exponential map from Lie algebra so3 to Lie group SO3.

            Modern Robotics Eqn 3.51, a.k.a. Rodrigues' formula.

            Args:
                w: (3,) An axis of rotation. This is assumed to be a unit-vector.
                theta: An angle of rotation.

            Returns:
                R: (3, 3) An orthonormal rotation matrix representing a rotation of
                magnitude theta about axis w.
        """
        W = self.skew(w)
        theta = theta[..., None, None]
        return (torch.eye(3)[None, ...] + torch.sin(theta) * W + (1.0 - torch.cos(theta)) * torch.matmul(W, W))
        
    def skew(self, w):
        """Build a skew matrix ("cross product matrix") for vector w.

            Modern Robotics Eqn 3.30.

            Args:
                w: (3,) A 3-vector

            Returns:
                W: (3, 3) A skew matrix such that W @ v == w x v
        """
        w_new = torch.zeros_like(w).unsqueeze(1).repeat(1,3,1) # W_ : Num_rays*Num_samples x 3 x 3
        w_re = torch.reshape(w_new, (w.shape[0], 9))
        w_re[..., 1] =  -w[...,2]
        w_re[..., 2] = w[..., 1]
        w_re[..., 3] = w[..., 2]
        w_re[..., 5] = -w[..., 0]
        w_re[..., 6] = -w[..., 1]
        w_re[..., 7] = w[..., 0]
        
        return w_re.reshape((w.shape[0], 3, 3))
        # w = torch.reshape(w, (3))
        # return torch.tensor([[0.0, -w[2], w[1]], \
                            # [w[2], 0.0, -w[0]], \
                            # [-w[1], w[0], 0.0]])
        
    
    def rp_to_se3(self, R, p):
        """
            Rotation and translation to homogeneous transform.

            Args:
                R: (3, 3) An orthonormal rotation matrix.
                p: (3,) A 3-vector representing an offset.

            Returns:
                X: (4, 4) The homogeneous transformation matrix described by rotating by R
                and translating by p.
        """
        RT_mat = torch.cat([R, p], -1)
        filling_mat = torch.tensor([0.0, 0.0, 0.0, 1.0])[None, None, ...].repeat(RT_mat.shape[0], 1, 1)
        return torch.cat([RT_mat, filling_mat], dim=-2)
        
    def to_homogenous(self, v):
        return torch.cat([v, torch.ones_like(v[..., :1])], axis=-1)
    
    def from_homogenous(self, v):
        return v[..., :3] / v[..., -1:]
    
    
    
# ---- models/dpnerf.py: View_Embedding, Rigid_Blurring_Kernel ----
class View_Embedding(nn.Module):
    def __init__(self, num_embed, embed_dim):
        super(View_Embedding, self).__init__()
        self.num_embed = num_embed
        self.embed_dim = embed_dim
        self.view_embed_layer = nn.Embedding(num_embed, embed_dim)
        
    def forward(self, x):
        return self.view_embed_layer(x)

class Rigid_Blurring_Kernel(nn.Module):
    def __init__(self, D, W, D_r, W_r, D_v, W_v, D_w, W_w,
                 output_ch_r, output_ch_v, input_ch, skips, rv_window, 
                 num_motion=2, near=0.0, far=1.0, ndc=False, warp_field=None, view_embedding_layer=None,
                 use_origin=True, use_awp=False):
        super(Rigid_Blurring_Kernel, self).__init__()
        
        self.use_awp = use_awp
        self.input_ch = input_ch
        self.skips = skips
        self.view_embedding_layer = view_embedding_layer
        self.view_embed_linears = nn.ModuleList(
            [nn.Linear(self.input_ch, W)] + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + self.input_ch, W) for i in
                                        range(D - 1)])
        
        self.use_origin = use_origin
        
        self.num_motion = num_motion
        
        self.output_ch_r = output_ch_r * num_motion
        self.output_ch_v = output_ch_v * num_motion 
        self.output_ch_w = num_motion
        self.rv_window = rv_window
        
        self.r_branch = nn.ModuleList([nn.Linear(W, W_r)] + [nn.Linear(W_r, W_r) for i in range(D_r-1)])
        self.r_linear = nn.Linear(W_r, self.output_ch_r)
        r_gain = 0.00001/(math.sqrt((W_r + self.output_ch_r)/6)) # for Uniform(-1.0e-5, 1.0e-5)
        torch.nn.init.xavier_uniform_(self.r_linear.weight, gain=r_gain) # -1e-5, 1e-5
        
        self.v_branch = nn.ModuleList([nn.Linear(W, W_v)] + [nn.Linear(W_v, W_v) for i in range(D_v-1)])
        self.v_linear = nn.Linear(W_v, self.output_ch_v)
        v_gain = 0.00001/(math.sqrt((W_v + self.output_ch_v)/6)) # for Uniform(-1.0e-5, 1.0e-5)
        torch.nn.init.xavier_uniform_(self.v_linear.weight, gain=v_gain) # -1e-5, 1e-5
        
        self.w_branch = nn.ModuleList([nn.Linear(W, W_w)] + [nn.Linear(W_w, W_w) for i in range(D_w-1)])
        self.w_linear = nn.Linear(W_w, self.output_ch_w + 1)
        
        self.warp_field = warp_field
    
    def rbk_warp(self, rays, r, v):
        r = r.reshape(r.shape[0], 3, self.num_motion)
        v = v.reshape(v.shape[0], 3, self.num_motion)
        rays_o = rays[...,0]
        rays_d = rays[...,1]
        pts_rays_end = rays_o + rays_d
        
    
        if self.use_origin:
            new_rays = torch.cat([rays_o[..., None], rays_d[...,None]], dim=-1).unsqueeze(1).repeat(1, self.num_motion + 1, 1, 1)
        else:
            new_rays = torch.zeros_like(rays.unsqueeze(1).repeat(1,self.num_motion, 1, 1))    
        
        for i in range(self.num_motion):
            warped_rays_o = self.warp_field.warp(rays_o, rot=r[:,:,i], trans=v[:,:,i])
            warped_pts_end = self.warp_field.warp(pts_rays_end, rot=r[:,:,i], trans=v[:,:,i])
            warped_rays_d = warped_pts_end - warped_rays_o
            warped_rays = torch.cat([warped_rays_o[..., None], warped_rays_d[..., None]], dim=-1)
            if self.use_origin:
                new_rays[:,i+1,:,:] = warped_rays
            else:
                new_rays[:,i,:,:] = warped_rays

        return new_rays
    
    def rbk_weighted_sum(self, rgb, depth, acc, extras, ccw):
        if self.use_origin:
            num_motion = self.num_motion + 1
        rgb = torch.sum((rgb.reshape(-1, num_motion, rgb.shape[-1]) * ccw[...,None]), dim=1)
        depth = torch.sum(depth.reshape(-1, num_motion) * ccw, dim=1)
        acc = torch.sum(acc.reshape(-1, num_motion) * ccw, dim=1)
        
        for k, v in extras.items():
            if len(v.shape) == 1:
                v = torch.sum(v.reshape(-1, num_motion) * ccw, dim=1)
            if len(v.shape) == 2:
                v = torch.sum((v.reshape(-1, num_motion, v.shape[-1]) * ccw[...,None]), dim=1)
            if len(v.shape) == 3:
                v = torch.sum((v.reshape(-1, num_motion, v.shape[-2], v.shape[-1]) * ccw[...,None][...,None]), dim=1)
            extras[k] = v
        
        return rgb, depth, acc, extras
    
    def forward(self, rays, rays_info):
        view_embedded = self.view_embedding_layer(rays_info['images_idx'].squeeze(-1))

        input_views_embedded = view_embedded
        h = view_embedded
        for i, l in enumerate(self.view_embed_linears):
            h = self.view_embed_linears[i](h)
            h = F.relu(h)
            if i in self.skips:
                h = torch.cat([input_views_embedded, h], -1)
        
        view_feature = h
        h_v = h.clone()
        h_w = h.clone()
        for i, _ in enumerate(self.r_branch):
            h = self.r_branch[i](h)
            h = F.relu(h)
        
        for i, _ in enumerate(self.v_branch):
            h_v = self.v_branch[i](h_v)
            h_v = F.relu(h_v)
        
        for i, _ in enumerate(self.w_branch):
            h_w = self.w_branch[i](h_w)
            h_w = F.relu(h_w)
        
        r = self.r_linear(h) * self.rv_window
        v = self.v_linear(h_v) * self.rv_window
        
        w = torch.sigmoid(self.w_linear(h_w))
        w = w/(torch.sum(w, dim=-1, keepdims=True) + 1e-10)
        
        new_rays = self.rbk_warp(rays, r, v)
        new_rays = new_rays.reshape(-1, 3, 2)
        
        if self.use_awp:
            return new_rays, w, view_feature
        else:
            return new_rays, w
    


if __name__ == '__main__':
    # configs/blur5grass/tx_blur5grass_dpnerf.txt (rbk_* options), at small widths
    num_img, view_embed_ch = 5, 16
    view_embed_layer = View_Embedding(num_embed=num_img, embed_dim=view_embed_ch)
    se3_field = SE3Field()
    rbk = Rigid_Blurring_Kernel(D=4, W=16, num_motion=4,
                                D_r=1, W_r=8, output_ch_r=3,
                                D_v=1, W_v=8, output_ch_v=3,
                                D_w=1, W_w=8, rv_window=0.1,
                                view_embedding_layer=view_embed_layer, use_origin=True,
                                input_ch=view_embed_ch, skips=[4], warp_field=se3_field, use_awp=False)
    optimizer = torch.optim.Adam(rbk.parameters(), lr=5e-4)
    for step in range(2):
        # random rays (origin, direction) and image indices instead of the LLFF loader
        rays = torch.randn(8, 3, 2)
        rays_info = {'images_idx': torch.randint(0, num_img, (8, 1))}
        optimizer.zero_grad()
        new_rays, ccw = rbk(rays, rays_info)
        # NeRFAll renders the warped rays and compares the weighted sum with the blurry pixels;
        # the renderer is left out here and a stand-in loss is put on the warped rays and weights
        loss = new_rays.pow(2).mean() + ccw.pow(2).mean()
        loss.backward()
        optimizer.step()
