/* sedp — GRU on the device (docs/opencl.md §3.2): per direction, X·Wᵀ for every time step in one
 * CLBlastSgemm (+ the folded biases by the GEMM epilogue), then per time step h·Rᵀ (CLBlast) and
 * the gates (kernels/rnn.cl): seq × 2 commands with linear_before_reset, seq × 4 without. Each
 * step's kernels carry its index; rows whose sequence has ended are left alone by the kernels, so
 * every step is enqueued whatever the lengths (the CPU loops to the longest; the result is the
 * same). A sequence_lens outside [0, seq] sets the step's status word: the run then takes the CPU
 * engine's message. */
#include "ocl-private.h"

#include "../exec/plan-private.h"

/* The scratch regions (the CPU's layout, ops-rnn.c), as refs into the step's scratch value. */
typedef struct {
  OclRef lens, xw, h, hr, rh, hn;
} GruRegions;

static gboolean
regions (OclPlan *o, const Step *s, const GruParams *p, GruRegions *r, GError **error)
{
  OclRef base;
  if (!nn_ocl_ref (o, s->out[p->scratch], &base, error))
    return FALSE;
  gint64 B = p->batch, H = p->hidden;
  guint64 f = sizeof (float), ints = (guint64) ((4 * B + 15) & ~(gint64) 15);
  r->lens = base;
  r->xw = (OclRef){base.mem, base.offset + ints * f};
  r->h = (OclRef){base.mem, r->xw.offset + (guint64) (p->seq * B * 3 * H) * f};
  r->hr = (OclRef){base.mem, r->h.offset + (guint64) (B * H) * f};
  r->rh = (OclRef){base.mem, r->hr.offset + (guint64) (3 * B * H) * f};
  r->hn = (OclRef){base.mem, r->rh.offset + (guint64) (B * H) * f};
  return TRUE;
}

/* C = A · Bᵀ, row-major, A [M, K] at @a, B [N, K] at @b, C [M, N] at @c. */
static void
add_gemm_nt (OclPlan *o, const Step *s, OclRef a, OclRef b, OclRef c, gint64 M, gint64 N, gint64 K)
{
  OclCmd cmd = {.kind = OCL_CMD_GEMM, .step = s, .what = "clblast sgemm NT"};
  OclGemm *g = &cmd.gemm;
  g->ta = CLBlastTransposeNo, g->tb = CLBlastTransposeYes;
  g->m = M, g->n = N, g->k = K, g->lda = K, g->ldb = K, g->ldc = N;
  g->a = a.mem, g->b = b.mem, g->c = c.mem;
  g->a_off = a.offset / sizeof (float);
  g->b_off = b.offset / sizeof (float);
  g->c_off = c.offset / sizeof (float);
  g->alpha = 1.0f;
  g_array_append_val (o->cmds, cmd);
}

static OclRef
at (OclRef r, gint64 floats)
{
  return (OclRef){r.mem, r.offset + (guint64) floats * sizeof (float)};
}

/* The setup of the whole step: lens (checked), Y zeroed when lengths may leave steps unwritten. */
static gboolean
add_setup (OclPlan *o, const Step *s, const GruParams *p, const GruRegions *r, GError **error)
{
  int lv = s->n_in > 4 ? s->in[4] : -1;
  int kind = lv < 0 ? 0 : o->cpu->values[lv].dtype == SEDP_NN_INT32 ? 1 : 2;
  int any = lv >= 0 ? lv : s->in[0];
  if (!nn_ocl_add_kernel (o, s, "gru_lens", (guint64) p->batch, error, "rvvmuuli", &r->lens, 8, any,
                          any, o->arena, nn_ocl_status_word (o, s), (guint64) p->batch, p->seq, kind))
    return FALSE;
  if (s->out[0] < 0 || lv < 0)
    return TRUE; /* without lengths every step of Y is written */
  gint64 n = p->seq * p->dirs * p->batch * p->hidden;
  return nn_ocl_add_kernel (o, s, "gru_h0", (guint64) n, error, "vvuuuiiii", s->out[0], s->out[0],
                            (guint64) n, (guint64) p->hidden, (guint64) p->batch, 0, 0, 1, 0);
}

/* X·W_dᵀ + bias_x_d, and h = initial_h or 0. */
static gboolean
add_direction_start (OclPlan *o, const Step *s, const GruParams *p, const GruRegions *r, int d,
                     cl_mem bias_x, GError **error)
{
  gint64 B = p->batch, H = p->hidden, rows = p->seq * B;
  OclRef x, w;
  if (!nn_ocl_ref (o, s->in[0], &x, error) || !nn_ocl_ref (o, s->in[1], &w, error))
    return FALSE;
  add_gemm_nt (o, s, x, at (w, d * 3 * H * p->input), r->xw, rows, 3 * H, p->input);
  OclRef bias = {bias_x, (guint64) (d * 3 * H) * sizeof (float)};
  if (!nn_ocl_add_kernel (o, s, "gemm_epilogue", (guint64) (rows * 3 * H), error, "rruuiiffi",
                          &r->xw, 4, &bias, 4, (guint64) (rows * 3 * H), (guint64) (3 * H), 2,
                          (int) ACT_NONE, 1.0, 0.0, 0))
    return FALSE;
  int h0 = s->n_in > 5 ? s->in[5] : -1;
  return nn_ocl_add_kernel (o, s, "gru_h0", (guint64) (B * H), error, "rvuuuiiii", &r->h, 4,
                            h0 >= 0 ? h0 : s->in[0], (guint64) (B * H), (guint64) H, (guint64) B,
                            h0 >= 0, (int) p->layout, p->dirs, d);
}

/* Time step @i of direction @d. */
static gboolean
add_time_step (OclPlan *o, const Step *s, const GruParams *p, const GruRegions *r, int d, gint64 i,
               cl_mem bias_h, GError **error)
{
  gint64 B = p->batch, H = p->hidden;
  OclRef rw;
  if (!nn_ocl_ref (o, s->in[2], &rw, error))
    return FALSE;
  OclRef r_d = at (rw, d * 3 * H * H);
  int rev = p->reverse || d == 1, has_y = s->out[0] >= 0, y = has_y ? s->out[0] : s->in[0];
  if (p->lbr) {
    add_gemm_nt (o, s, r->h, r_d, r->hr, B, 3 * H, H);
    return nn_ocl_add_kernel (o, s, "gru_step_lbr", (guint64) (B * H), error, "rrrvrmuuulliiiiifii",
                              &r->xw, 4, &r->hr, 4, &r->h, 4, y, &r->lens, 8, bias_h,
                              (guint64) (d * 3 * H), (guint64) B, (guint64) H, p->seq, i, rev,
                              (int) p->layout, p->dirs, d, has_y, (double) p->clip, (int) p->f[d],
                              (int) p->g[d]);
  }
  add_gemm_nt (o, s, r->h, r_d, r->hr, B, 2 * H, H);
  if (!nn_ocl_add_kernel (o, s, "gru_step_zr", (guint64) (B * H), error, "rrrrruulliifi", &r->xw,
                          4, &r->hr, 4, &r->h, 4, &r->rh, 4, &r->lens, 8, (guint64) B, (guint64) H,
                          p->seq, i, rev, (int) p->layout, (double) p->clip, (int) p->f[d]))
    return FALSE;
  add_gemm_nt (o, s, r->rh, at (r_d, 2 * H * H), r->hn, B, H, H);
  return nn_ocl_add_kernel (o, s, "gru_step_h", (guint64) (B * H), error, "rrrrvruulliiiiifi",
                            &r->xw, 4, &r->hr, 4, &r->h, 4, &r->hn, 4, y, &r->lens, 8, (guint64) B,
                            (guint64) H, p->seq, i, rev, (int) p->layout, p->dirs, d, has_y,
                            (double) p->clip, (int) p->g[d]);
}

gboolean
nn_ocl_lower_gru (OclPlan *o, const Step *s, GError **error)
{
  const GruParams *p = s->params;
  GruRegions r;
  cl_mem bias_x, bias_h;
  gsize bias_bytes = (gsize) (p->dirs * 3 * p->hidden) * sizeof (float);
  if (!regions (o, s, p, &r, error) ||
      !nn_ocl_upload (o, p->bias_x, bias_bytes, "a GRU's input biases", &bias_x, error) ||
      !nn_ocl_upload (o, p->bias_h, bias_bytes, "a GRU's recurrent biases", &bias_h, error) ||
      !add_setup (o, s, p, &r, error))
    return FALSE;
  int yh = p->scratch > 1 ? s->out[1] : -1;
  for (int d = 0; d < p->dirs; d++) {
    if (!add_direction_start (o, s, p, &r, d, bias_x, error))
      return FALSE;
    for (gint64 i = 0; i < p->seq; i++)
      if (!add_time_step (o, s, p, &r, d, i, bias_h, error))
        return FALSE;
    if (yh >= 0 && !nn_ocl_add_kernel (o, s, "gru_yh", (guint64) (p->batch * p->hidden), error,
                                       "rvruuiii", &r.h, 4, yh, &r.lens, 8, (guint64) p->batch,
                                       (guint64) p->hidden, (int) p->layout, p->dirs, d))
      return FALSE;
  }
  return TRUE;
}
