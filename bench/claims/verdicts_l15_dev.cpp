#include "verdicts_l15_dev.hpp"

namespace gl::claims {

Judgement judge_dev1(const Dev1Measured& m) {
    const bool counts_hold = m.once.host_syncs_per_step == 0.0 && m.item_every_step.host_syncs_per_step == 1.0 &&
                             m.batch_per_op.copies_to_device_per_step > m.once.copies_to_device_per_step;
    const std::string counts =
        "host syncs per step: " + fixed(m.once.host_syncs_per_step, 2) + " in the default loop, " +
        fixed(m.item_every_step.host_syncs_per_step, 2) + " reading the loss every step; copies to the device per step: " +
        fixed(m.once.copies_to_device_per_step, 2) + " with the batch copied once, " +
        fixed(m.batch_per_op.copies_to_device_per_step, 2) + " copied per op";
    if (!counts_hold)
        return {Verdict::NotReproduced, "the counts are not what the loop promises (0 syncs by default, 1 with .item(), "
                                        "more copies per op): " + counts};
    const double sync_cost = m.item_every_step.seconds_per_step / m.once.seconds_per_step;
    const double copy_cost = m.batch_per_op.seconds_per_step / m.once.seconds_per_step;
    const std::string times = "step time x" + fixed(sync_cost, 3) + " with one sync per step, x" + fixed(copy_cost, 3) +
                              " with the batch copied per op";
    if (!m.on_gpu)
        return {Verdict::NeedsGpu, counts + "; on the CPU runtime a launch returns when its grid is done, so a sync "
                                            "waits for nothing and a copy is a memcpy: the costs are a GPU's (" +
                                       times + " here)"};
    const bool costly = sync_cost >= 1.03 && copy_cost >= 1.03;
    return {costly ? Verdict::Reproduced : Verdict::NotReproduced,
            counts + "; on the GPU " + times + (costly ? " (each >= 1.03 needed)" : ": NOT both >= 1.03")};
}

}  // namespace gl::claims
