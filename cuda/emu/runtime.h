// runtime.h is the emulated device's execution engine (included once, by
// cuda/emulator.cc, after cuda_shim.h and the kernel sources): a launch runs
// the grid's blocks on up to `workers` OS threads; a block's threads are
// fibers (stackful coroutines) on one OS thread, run in threadIdx order until each
// finishes or reaches __syncthreads, where the block waits until every live
// thread has arrived. A barrier reached by some threads while others have
// already returned is reported as an error (on a GPU it hangs or is
// undefined). Kernel parameters arrive as the driver's 8-byte slots and are
// unpacked by the kernel's own parameter types (low bytes, little-endian).
#ifndef FAIRDP_EMU_RUNTIME_H
#define FAIRDP_EMU_RUNTIME_H

#include <sys/mman.h>
#include <ucontext.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace fairdp_emu {

thread_local const uint3* thread_idx;
thread_local uint3 block_idx, block_dim, grid_dim;

// ---- kernel registry ----

typedef void (*AnyKernel)();
typedef void (*Invoke)(AnyKernel, const uint64_t*);

struct Kernel {
    const char* name;
    AnyKernel fn;
    Invoke invoke;
    std::string kinds;  // one letter per parameter: p pointer, 4 or 8 bytes of value
};

template <typename T>
static T slot(uint64_t s) {
    static_assert(sizeof(T) <= 8, "a kernel parameter larger than its 8-byte slot");
    static_assert(std::is_trivially_copyable<T>::value, "kernel parameters must be trivially copyable");
    T v;
    memcpy(&v, &s, sizeof(T));
    return v;
}

template <typename... A>
struct Invoker {
    template <size_t... I>
    static void call(void (*f)(A...), const uint64_t* s, std::index_sequence<I...>) {
        f(slot<A>(s[I])...);
    }
    static void invoke(AnyKernel fn, const uint64_t* s) {
        call(reinterpret_cast<void (*)(A...)>(fn), s, std::index_sequence_for<A...>{});
    }
    static std::string kinds() {
        return std::string{(std::is_pointer<A>::value ? 'p' : (sizeof(A) == 8 ? '8' : '4'))...};
    }
};

template <typename... A>
static Kernel kernel(const char* name, void (*f)(A...)) {
    return Kernel{name, reinterpret_cast<AnyKernel>(f), &Invoker<A...>::invoke, Invoker<A...>::kinds()};
}

// ---- fibers ----
// On x86-64 a fiber switch is a few instructions of our own (callee-saved
// registers and the stack pointer; the kernels do not change the FP control
// registers); elsewhere (or with -DFAIRDP_EMU_UCONTEXT) ucontext, whose
// swapcontext makes a system call per switch and so is ~15× slower.

static const size_t kStack = 128 << 10;  // per thread; kernels use a few hundred bytes
static const size_t kGuard = 4096;       // PROT_NONE page below each stack

#if defined(__x86_64__) && !defined(FAIRDP_EMU_UCONTEXT)
extern "C" void fairdp_emu_switch(void** save_sp, void* load_sp);
__asm__(
    ".text\n"
    ".globl fairdp_emu_switch\n"
    ".type fairdp_emu_switch,@function\n"
    "fairdp_emu_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size fairdp_emu_switch, .-fairdp_emu_switch\n"
    ".section .note.GNU-stack,\"\",@progbits\n"
    ".text\n");

struct Ctx {
    void* sp = nullptr;
};

// ctx_make prepares c to start entry (which must never return) on the
// stack [stack, stack+size): six zero registers, then entry as the return
// address, then a fake return address so that entry sees the stack aligned
// as after a call.
static void ctx_make(Ctx* c, char* stack, size_t size, void (*entry)()) {
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;
    *--sp = (void*)entry;
    for (int i = 0; i < 6; i++) *--sp = nullptr;
    c->sp = sp;
}

static void ctx_swap(Ctx* save, Ctx* load) { fairdp_emu_switch(&save->sp, load->sp); }
#else
struct Ctx {
    ucontext_t uc;
};

static void ctx_make(Ctx* c, char* stack, size_t size, void (*entry)()) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, entry, 0);
}

static void ctx_swap(Ctx* save, Ctx* load) { swapcontext(&save->uc, &load->uc); }
#endif

struct Fiber {
    Ctx ctx;
    char* mem = nullptr;  // guard page + stack
    uint3 idx;
    bool done = false, waiting = false;
};

struct Launch {
    const Kernel* k;
    const uint64_t* args;
    uint3 grid, block;
    long long blocks;
    std::atomic<long long> next{0};
    std::atomic<bool> failed{false};
    std::mutex mu;
    std::string err;
    void fail(const std::string& e) {
        std::lock_guard<std::mutex> l(mu);
        if (!failed.exchange(true)) err = e;
    }
};

// Worker holds one OS thread's fibers; their stacks are kept for the next
// launch (a pool, as threads come and go per launch).
struct Worker {
    Ctx sched;
    std::vector<Fiber> fibers;
    Launch* launch = nullptr;
    int current = 0;
    bool ok = true;
};

static thread_local Worker* worker;
static std::mutex pool_mu;
static std::vector<Worker*> pool;

static Worker* take_worker() {
    std::lock_guard<std::mutex> l(pool_mu);
    if (pool.empty()) return new Worker();
    Worker* w = pool.back();
    pool.pop_back();
    return w;
}

static void give_worker(Worker* w) {
    std::lock_guard<std::mutex> l(pool_mu);
    pool.push_back(w);
}

static bool ensure_fibers(Worker* w, size_t n) {
    while (w->fibers.size() < n) {
        Fiber f;
        void* m = mmap(nullptr, kGuard + kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return false;
        mprotect(m, kGuard, PROT_NONE);
        f.mem = (char*)m;
        w->fibers.push_back(f);
    }
    return true;
}

void syncthreads() {
    Worker* w = worker;
    Fiber& f = w->fibers[w->current];
    f.waiting = true;
    ctx_swap(&f.ctx, &w->sched);
}

// fiber_main runs one thread of the kernel, then hands control back to the
// scheduler for good (it must never return: there is no frame to return to).
static void fiber_main() {
    Worker* w = worker;
    w->launch->k->invoke(w->launch->k->fn, w->launch->args);
    Fiber& f = w->fibers[w->current];
    f.done = true;
    ctx_swap(&f.ctx, &w->sched);
    abort();
}

// run_block runs one block to completion; false after a divergent barrier.
static bool run_block(Worker* w, long long b) {
    Launch* L = w->launch;
    block_idx = uint3{(unsigned)(b % L->grid.x), (unsigned)((b / L->grid.x) % L->grid.y),
                      (unsigned)(b / ((long long)L->grid.x * L->grid.y))};
    const int n = (int)(L->block.x * L->block.y * L->block.z);
    for (int t = 0; t < n; t++) {
        Fiber& f = w->fibers[t];
        f.idx = uint3{t % L->block.x, (t / L->block.x) % L->block.y, t / (L->block.x * L->block.y)};
        f.done = f.waiting = false;
        ctx_make(&f.ctx, f.mem + kGuard, kStack, fiber_main);
    }
    int live = n;
    for (int phase = 0; live > 0; phase++) {
        int waiting = 0;
        for (int t = 0; t < n; t++) {
            Fiber& f = w->fibers[t];
            if (f.done) continue;
            f.waiting = false;
            w->current = t;
            thread_idx = &f.idx;
            ctx_swap(&w->sched, &f.ctx);
            if (f.done) {
                live--;
            } else {
                waiting++;
            }
        }
        if (waiting > 0 && waiting != n) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "%s: block (%u,%u,%u): %d of %d threads wait at __syncthreads (barrier %d) while the others have returned",
                     L->k->name, block_idx.x, block_idx.y, block_idx.z, waiting, n, phase + 1);
            L->fail(msg);
            return false;  // the waiting fibers are abandoned; their stacks are reused
        }
    }
    return true;
}

static void run_worker(Launch* L) {
    Worker* w = take_worker();
    worker = w;
    w->launch = L;
    block_dim = L->block;
    grid_dim = L->grid;
    if (!ensure_fibers(w, (size_t)L->block.x * L->block.y * L->block.z)) {
        L->fail("out of memory for thread stacks");
    } else {
        for (;;) {
            if (L->failed.load()) break;
            long long b = L->next.fetch_add(1);
            if (b >= L->blocks) break;
            if (!run_block(w, b)) break;
        }
    }
    worker = nullptr;
    w->launch = nullptr;
    give_worker(w);
}

}  // namespace fairdp_emu

#endif
