import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/** Calls the Java producer's methods the stall agent's points name, in the order of its arguments ("send", "commit"),
 *  and prints how long each took; no broker is needed (a send fails fast, a commit without a transaction throws). */
public class StallProbe {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", "127.0.0.1:9");  // discard: nothing answers
        props.put("max.block.ms", "100");
        props.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        props.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        for (String op : args) {
            long started = System.nanoTime();
            try {
                if (op.equals("send")) {
                    producer.send(new ProducerRecord<>("probe", "k", "v"));
                } else {
                    producer.commitTransaction();
                }
            } catch (RuntimeException expected) {
                // no transaction: the point was passed before it threw
            }
            System.out.println(op + " " + (System.nanoTime() - started) / 1_000_000);
        }
        producer.close(java.time.Duration.ZERO);
    }
}
