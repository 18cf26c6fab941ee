#include "textflag.h"

// func cloneHolder(args *cloneArgs, size uintptr) (pid int, errno uintptr)
//
// clone3(args, size). The child (holder.go) runs on a stack it never
// writes to and only makes system calls: prctl(PR_SET_PDEATHSIG,
// SIGKILL), then pause() until it is killed. It never returns to Go.
TEXT ·cloneHolder(SB),NOSPLIT|NOFRAME,$0-32
	MOVQ	args+0(FP), DI
	MOVQ	size+8(FP), SI
	MOVQ	$435, AX	// SYS_clone3
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $0xfffffffffffff001
	JCS	ok
	NEGQ	AX
	MOVQ	$-1, pid+16(FP)
	MOVQ	AX, errno+24(FP)
	RET
ok:
	MOVQ	AX, pid+16(FP)
	MOVQ	$0, errno+24(FP)
	RET
child:
	MOVQ	$1, DI	// PR_SET_PDEATHSIG
	MOVQ	$9, SI	// SIGKILL
	MOVQ	$157, AX	// SYS_prctl
	SYSCALL
loop:
	MOVQ	$34, AX	// SYS_pause
	SYSCALL
	JMP	loop
