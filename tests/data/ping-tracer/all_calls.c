/* Every MPI call g2gtrace intercepts, once or more, on exactly 4 ranks (tests/test_tracer.py).
 * The program checks its own results (exit status 1 + message on a wrong value), so a wrapper that
 * passes a wrong argument on is caught.  Each collective moves COUNT ints per block. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4
static int rank, size, errors;

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "rank %d: wrong result of %s\n", rank, what);
        errors++;
    }
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) MPI_Abort(MPI_COMM_WORLD, 2);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int a[4 * COUNT], b[4 * COUNT], counts[4], displs[4];
    for (int i = 0; i < 4; i++) {
        counts[i] = COUNT;
        displs[i] = i * COUNT;
    }
    MPI_Status st;
    MPI_Request rq[8];

    /* ---- blocking sends: each to the right, received from the left with ANY_SOURCE/ANY_TAG ---- */
    char bsend_buf[MPI_BSEND_OVERHEAD + 64];
    void *detached;
    int dsize;
    MPI_Buffer_attach(bsend_buf, sizeof bsend_buf);
    for (int kind = 0; kind < 4; kind++) {
        a[0] = rank * 10 + kind;
        MPI_Irecv(b, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[0]);
        MPI_Barrier(MPI_COMM_WORLD); /* Rsend needs the receive posted */
        if (kind == 0) MPI_Send(a, 1, MPI_INT, right, 10, MPI_COMM_WORLD);
        if (kind == 1) MPI_Ssend(a, 1, MPI_INT, right, 11, MPI_COMM_WORLD);
        if (kind == 2) MPI_Bsend(a, 1, MPI_INT, right, 12, MPI_COMM_WORLD);
        if (kind == 3) MPI_Rsend(a, 1, MPI_INT, right, 13, MPI_COMM_WORLD);
        MPI_Wait(&rq[0], &st);
        check(b[0] == left * 10 + kind && st.MPI_SOURCE == left && st.MPI_TAG == 10 + kind, "blocking sends");
    }
    MPI_Buffer_detach(&detached, &dsize);

    /* ---- nonblocking sends, completed by Waitany / Waitsome / Testall / Testany / Testsome ---- */
    MPI_Buffer_attach(bsend_buf, sizeof bsend_buf);
    a[0] = rank;
    MPI_Irecv(&b[0], 1, MPI_INT, left, 20, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&b[1], 1, MPI_INT, left, 21, MPI_COMM_WORLD, &rq[1]);
    MPI_Irecv(&b[2], 1, MPI_INT, left, 22, MPI_COMM_WORLD, &rq[2]);
    MPI_Irecv(&b[3], 1, MPI_INT, left, 23, MPI_COMM_WORLD, &rq[3]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Isend(a, 1, MPI_INT, right, 20, MPI_COMM_WORLD, &rq[4]);
    MPI_Issend(a, 1, MPI_INT, right, 21, MPI_COMM_WORLD, &rq[5]);
    MPI_Ibsend(a, 1, MPI_INT, right, 22, MPI_COMM_WORLD, &rq[6]);
    MPI_Irsend(a, 1, MPI_INT, right, 23, MPI_COMM_WORLD, &rq[7]);
    int idx, outcount, indices[8], flag = 0, done = 0;
    MPI_Waitany(8, rq, &idx, MPI_STATUS_IGNORE);
    done++;
    MPI_Waitsome(8, rq, &outcount, indices, MPI_STATUSES_IGNORE);
    done += outcount;
    while (done < 8) {
        MPI_Testsome(8, rq, &outcount, indices, MPI_STATUSES_IGNORE);
        if (outcount != MPI_UNDEFINED) done += outcount;
        if (done < 8) {
            MPI_Testany(8, rq, &idx, &flag, MPI_STATUS_IGNORE);
            if (flag && idx != MPI_UNDEFINED) done++;
        }
    }
    MPI_Testall(8, rq, &flag, MPI_STATUSES_IGNORE);
    check(flag && b[0] == left && b[1] == left && b[2] == left && b[3] == left, "nonblocking sends");
    MPI_Buffer_detach(&detached, &dsize);

    /* ---- MPI_Test loop, PROC_NULL, Request_free, Cancel ---- */
    MPI_Irecv(b, 1, MPI_INT, left, 30, MPI_COMM_WORLD, &rq[0]);
    MPI_Send(a, 1, MPI_INT, right, 30, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Test(&rq[0], &flag, &st);
    MPI_Isend(a, 1, MPI_INT, MPI_PROC_NULL, 31, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(b, 1, MPI_INT, MPI_PROC_NULL, 31, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Send(a, 1, MPI_INT, MPI_PROC_NULL, 32, MPI_COMM_WORLD);
    MPI_Recv(b, 1, MPI_INT, MPI_PROC_NULL, 32, MPI_COMM_WORLD, &st);
    MPI_Isend(a, 1, MPI_INT, right, 33, MPI_COMM_WORLD, &rq[0]);
    MPI_Request_free(&rq[0]);
    MPI_Recv(b, 1, MPI_INT, left, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(b, 1, MPI_INT, left, 34, MPI_COMM_WORLD, &rq[0]); /* never sent: cancelled */
    MPI_Cancel(&rq[0]);
    MPI_Wait(&rq[0], &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    check(cancelled, "MPI_Cancel");

    /* ---- Sendrecv, Sendrecv_replace ---- */
    a[0] = rank;
    MPI_Sendrecv(a, 1, MPI_INT, right, 40, b, 1, MPI_INT, left, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(b[0] == left, "MPI_Sendrecv");
    b[0] = rank;
    MPI_Sendrecv_replace(b, 1, MPI_INT, right, 41, left, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(b[0] == left, "MPI_Sendrecv_replace");

    /* ---- blocking collectives ---- */
    for (int i = 0; i < 4 * COUNT; i++) a[i] = rank + i;
    MPI_Barrier(MPI_COMM_WORLD);
    memcpy(b, a, sizeof a);
    MPI_Bcast(b, COUNT, MPI_INT, 2, MPI_COMM_WORLD);
    check(b[0] == 2, "MPI_Bcast");
    MPI_Reduce(a, b, COUNT, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD);
    check(rank != 1 || b[0] == 6, "MPI_Reduce");
    MPI_Allreduce(a, b, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(b[1] == 10, "MPI_Allreduce");
    memcpy(b, a, sizeof a);
    MPI_Allreduce(MPI_IN_PLACE, b, COUNT, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    check(b[0] == 3, "MPI_Allreduce in place");
    MPI_Gather(a, COUNT, MPI_INT, b, COUNT, MPI_INT, 0, MPI_COMM_WORLD);
    check(rank != 0 || b[3 * COUNT] == 3, "MPI_Gather");
    MPI_Gatherv(a, COUNT, MPI_INT, b, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    check(rank != 0 || b[2 * COUNT] == 2, "MPI_Gatherv");
    MPI_Scatter(a, COUNT, MPI_INT, b, COUNT, MPI_INT, 3, MPI_COMM_WORLD);
    check(b[0] == 3 + rank * COUNT, "MPI_Scatter");
    MPI_Scatterv(a, counts, displs, MPI_INT, b, COUNT, MPI_INT, 3, MPI_COMM_WORLD);
    check(b[0] == 3 + rank * COUNT, "MPI_Scatterv");
    MPI_Allgather(a, COUNT, MPI_INT, b, COUNT, MPI_INT, MPI_COMM_WORLD);
    check(b[COUNT] == 1, "MPI_Allgather");
    MPI_Allgatherv(a, COUNT, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
    check(b[2 * COUNT] == 2, "MPI_Allgatherv");
    MPI_Alltoall(a, COUNT, MPI_INT, b, COUNT, MPI_INT, MPI_COMM_WORLD);
    check(b[COUNT] == 1 + rank * COUNT, "MPI_Alltoall");
    MPI_Alltoallv(a, counts, displs, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
    check(b[COUNT] == 1 + rank * COUNT, "MPI_Alltoallv");
    MPI_Reduce_scatter(a, b, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(b[0] == 6 + 4 * rank * COUNT, "MPI_Reduce_scatter");
    MPI_Reduce_scatter_block(a, b, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(b[0] == 6 + 4 * rank * COUNT, "MPI_Reduce_scatter_block");
    MPI_Scan(a, b, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(b[0] == rank * (rank + 1) / 2, "MPI_Scan");
    MPI_Exscan(a, b, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(rank == 0 || b[0] == rank * (rank - 1) / 2, "MPI_Exscan");

    /* ---- nonblocking collectives, one MPI_Waitall ---- */
    static int nb[16][4 * COUNT];
    MPI_Request cr[16];
    MPI_Ibarrier(MPI_COMM_WORLD, &cr[0]);
    memcpy(nb[1], a, sizeof a);
    MPI_Ibcast(nb[1], COUNT, MPI_INT, 2, MPI_COMM_WORLD, &cr[1]);
    MPI_Ireduce(a, nb[2], COUNT, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD, &cr[2]);
    MPI_Iallreduce(a, nb[3], COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr[3]);
    MPI_Igather(a, COUNT, MPI_INT, nb[4], COUNT, MPI_INT, 0, MPI_COMM_WORLD, &cr[4]);
    MPI_Igatherv(a, COUNT, MPI_INT, nb[5], counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &cr[5]);
    MPI_Iscatter(a, COUNT, MPI_INT, nb[6], COUNT, MPI_INT, 3, MPI_COMM_WORLD, &cr[6]);
    MPI_Iscatterv(a, counts, displs, MPI_INT, nb[7], COUNT, MPI_INT, 3, MPI_COMM_WORLD, &cr[7]);
    MPI_Iallgather(a, COUNT, MPI_INT, nb[8], COUNT, MPI_INT, MPI_COMM_WORLD, &cr[8]);
    MPI_Iallgatherv(a, COUNT, MPI_INT, nb[9], counts, displs, MPI_INT, MPI_COMM_WORLD, &cr[9]);
    MPI_Ialltoall(a, COUNT, MPI_INT, nb[10], COUNT, MPI_INT, MPI_COMM_WORLD, &cr[10]);
    MPI_Ialltoallv(a, counts, displs, MPI_INT, nb[11], counts, displs, MPI_INT, MPI_COMM_WORLD, &cr[11]);
    MPI_Ireduce_scatter(a, nb[12], counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr[12]);
    MPI_Ireduce_scatter_block(a, nb[13], COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr[13]);
    MPI_Iscan(a, nb[14], COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr[14]);
    MPI_Iexscan(a, nb[15], COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr[15]);
    MPI_Waitall(16, cr, MPI_STATUSES_IGNORE);
    check(nb[1][0] == 2 && nb[3][1] == 10 && nb[8][COUNT] == 1 && nb[14][0] == rank * (rank + 1) / 2,
          "nonblocking collectives");

    /* ---- communicators ---- */
    MPI_Comm dup, dupi, split, type, created, grp, cart, sub;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_dup_with_info(dup, MPI_INFO_NULL, &dupi);
    MPI_Comm_split(dupi, rank < 3, size - rank, &split); /* {3} and {2, 1, 0} */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &type);
    MPI_Group world_group, even_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int evens[2] = {0, 2};
    MPI_Group_incl(world_group, 2, evens, &even_group);
    MPI_Comm_create(MPI_COMM_WORLD, even_group, &created); /* MPI_COMM_NULL on odd ranks */
    grp = MPI_COMM_NULL;
    if (rank % 2 == 0) MPI_Comm_create_group(MPI_COMM_WORLD, even_group, 7, &grp);
    int dims[2] = {2, 2}, periods[2] = {1, 0}, remain[2] = {1, 0};
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_sub(cart, remain, &sub);
    int x = 1, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, split);
    check(y == (rank < 3 ? 3 : 1), "split communicator");
    if (created != MPI_COMM_NULL) {
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, created);
        check(y == 2, "MPI_Comm_create");
        MPI_Comm_free(&created);
    }
    if (grp != MPI_COMM_NULL) {
        MPI_Barrier(grp);
        MPI_Comm_free(&grp);
    }
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, sub);
    check(y == 2, "MPI_Cart_sub");
    MPI_Comm_free(&sub);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&type);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dupi);
    MPI_Comm_free(&dup);
    MPI_Group_free(&even_group);
    MPI_Group_free(&world_group);

    int all_errors = 0;
    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all_errors ? 1 : 0;
}
