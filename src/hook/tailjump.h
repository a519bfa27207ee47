/* Entry points that must reach libc with the program's own return address.
 * dlsym(RTLD_NEXT, ...) and dlopen (for the caller's RUNPATH and namespace) look
 * at who called them; a C wrapper calling libc would make that libcudafrag.
 * CF_TAILJUMP(name, target) defines the exported function `name`: it calls
 * `target` with the same first three arguments, which returns the function to
 * continue in (NULL: return NULL), and jumps there with the arguments and return
 * address untouched. */
#ifndef CF_HOOK_TAILJUMP_H
#define CF_HOOK_TAILJUMP_H

#define CF_TJ_STR2(x) #x
#define CF_TJ_STR(x)  CF_TJ_STR2(x)

#if defined(__x86_64__)
#ifdef __CET__
#define CF_TJ_ENDBR "endbr64\n"
#else
#define CF_TJ_ENDBR ""
#endif
/* Three pushes realign the stack to 16 bytes for the call. */
#define CF_TAILJUMP(name, target)                                                                  \
    __asm__(".text\n"                                                                              \
            ".globl " #name "\n"                                                                   \
            ".type " #name ", @function\n"                                                         \
            ".p2align 4\n" #name ":\n" CF_TJ_ENDBR "pushq %rdi\n"                                  \
            "pushq %rsi\n"                                                                         \
            "pushq %rdx\n"                                                                         \
            "call " #target "\n"                                                                   \
            "popq %rdx\n"                                                                          \
            "popq %rsi\n"                                                                          \
            "popq %rdi\n"                                                                          \
            "testq %rax, %rax\n"                                                                   \
            "je 1f\n"                                                                              \
            "jmp *%rax\n"                                                                          \
            "1:\n"                                                                                 \
            "ret\n"                                                                                \
            ".size " #name ", .-" #name "\n")
#elif defined(__aarch64__)
#define CF_TAILJUMP(name, target)                                                                  \
    __asm__(".text\n"                                                                              \
            ".globl " #name "\n"                                                                   \
            ".type " #name ", %function\n"                                                         \
            ".p2align 4\n" #name ":\n"                                                             \
            "stp x29, x30, [sp, #-48]!\n"                                                          \
            "stp x0, x1, [sp, #16]\n"                                                              \
            "str x2, [sp, #32]\n"                                                                  \
            "bl " #target "\n"                                                                     \
            "mov x16, x0\n"                                                                        \
            "ldp x0, x1, [sp, #16]\n"                                                              \
            "ldr x2, [sp, #32]\n"                                                                  \
            "ldp x29, x30, [sp], #48\n"                                                            \
            "cbz x16, 1f\n"                                                                        \
            "br x16\n"                                                                             \
            "1:\n"                                                                                 \
            "mov x0, #0\n"                                                                         \
            "ret\n"                                                                                \
            ".size " #name ", .-" #name "\n")
#else
#error "libcudafrag needs a tail-jump entry (hook/tailjump.h) for this architecture"
#endif

#endif
