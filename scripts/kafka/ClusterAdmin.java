// What scripts/kafka_cluster.sh asks a cluster through Kafka's public Admin
// API (kafka-clients, the same calls on 3.9 and 4.x), since kcat's metadata
// cannot tell the quorum's leader or a transactional id's coordinator:
//
//   ClusterAdmin controller BOOTSTRAP     the active controller's node id
//                                         (the metadata quorum's leader)
//   ClusterAdmin coordinator BOOTSTRAP ID the node id of the transaction
//                                         coordinator of transactional id ID
//   ClusterAdmin warm BOOTSTRAP           creates __consumer_offsets and
//                                         __transaction_state (a
//                                         FindCoordinator for a group and a
//                                         transactional id does), so a
//                                         node lost later cannot stop their
//                                         creation at replication factor 3
//
// Prints one line; errors go to stderr as one line and exit 1.
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.utils.Utils;

public class ClusterAdmin {
  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: ClusterAdmin controller|coordinator|warm BOOTSTRAP [ID]");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
    try (Admin admin = Admin.create(props)) {
      switch (args[0]) {
        case "controller":
          System.out.println(admin.describeMetadataQuorum().quorumInfo().get().leaderId());
          break;
        case "coordinator":
          System.out.println(coordinator(admin, args[2]));
          break;
        case "warm":
          warm(admin);
          System.out.println("ok");
          break;
        default:
          System.err.println("unknown command " + args[0]);
          System.exit(2);
      }
    } catch (ExecutionException e) {
      System.err.println("error: " + e.getCause());
      System.exit(1);
    }
  }

  // Creates both internal topics. Just created, a topic may be unknown to
  // the broker asked next (its metadata is on the way: a retriable error)
  // or have no leader yet: asked again every half second, for 2 minutes.
  static void warm(Admin admin) throws Exception {
    final long deadline = System.nanoTime() + 120_000_000_000L;
    for (;;) {
      try {
        try {
          admin.describeConsumerGroups(List.of("outbox-cluster-warm")).all().get();
        } catch (ExecutionException e) {  // 4.x: an unknown group is an error
          if (!(e.getCause() instanceof GroupIdNotFoundException)) throw e;
        }
        coordinator(admin, "outbox-cluster-warm");
        return;
      } catch (ExecutionException | IllegalStateException e) {
        final boolean retriable = e instanceof IllegalStateException
            || e.getCause() instanceof RetriableException;
        if (!retriable || System.nanoTime() > deadline) throw e;
        Thread.sleep(500);
      }
    }
  }

  // The coordinator the broker names for the id (DescribeTransactions goes
  // to it after a FindCoordinator). An id no producer has used yet has no
  // state to describe; its coordinator is the leader of the partition of
  // __transaction_state the id hashes to, which is what FindCoordinator
  // answers (Utils.abs(id.hashCode()) % partitions, as the broker computes).
  static int coordinator(Admin admin, String id) throws Exception {
    try {
      return admin.describeTransactions(List.of(id)).description(id).get().coordinatorId();
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TransactionalIdNotFoundException)) throw e;
    }
    Map<String, TopicDescription> topics =
        admin.describeTopics(List.of("__transaction_state")).allTopicNames().get();
    TopicDescription state = topics.get("__transaction_state");
    int partition = Utils.abs(id.hashCode()) % state.partitions().size();
    for (TopicPartitionInfo p : state.partitions()) {
      if (p.partition() == partition && p.leader() != null) return p.leader().id();
    }
    throw new IllegalStateException("no leader for __transaction_state-" + partition);
  }
}
