// The quota meter of one broker: once a second, the broker's own quota metrics of the given client ids, read over
// JMX on loopback, one CSV line per client and sensor that exists at that moment:
//     epoch_ms,sensor,client_id,value,throttle_time_ms
// Kafka's JmxTool cannot do this: it resolves its object names once (and gives up after 10 s when a client has not
// connected yet), while a soak's clients come and go. Run in source-file mode, no build step:
//     java QuotaMeter.java <jmx port> <sensor>:<client id> [<sensor>:<client id> ...]
// where <sensor> is Produce (byte-rate), Fetch (byte-rate) or Request (request-time). A broker restarted by the
// program is reconnected to. Ends on SIGTERM.
import java.util.ArrayList;
import java.util.List;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class QuotaMeter {
    public static void main(String[] args) throws Exception {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        List<String[]> wanted = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            wanted.add(args[i].split(":", 2));
        }
        while (true) {  // a broker killed and restarted by the program (bN-, bN+) is reconnected to
            try (JMXConnector connector = connect(url)) {
                sample(connector.getMBeanServerConnection(), wanted);
            } catch (java.io.IOException e) {
                System.err.println("lost the broker's JMX (" + e + "); reconnecting");
            }
        }
    }

    private static void sample(MBeanServerConnection server, List<String[]> wanted) throws Exception {
        while (true) {
            long now = System.currentTimeMillis();
            for (String[] sensorAndClient : wanted) {
                String sensor = sensorAndClient[0];
                ObjectName name = new ObjectName("kafka.server:type=" + sensor + ",client-id="
                    + jmxSanitize(sensorAndClient[1]));
                if (!server.isRegistered(name)) {
                    continue;
                }
                String attribute = sensor.equals("Request") ? "request-time" : "byte-rate";
                Object value = server.getAttribute(name, attribute);
                Object throttle = server.getAttribute(name, "throttle-time");
                System.out.println(now + "," + sensor + "," + sensorAndClient[1] + "," + value + "," + throttle);
            }
            System.out.flush();
            Thread.sleep(1000 - System.currentTimeMillis() % 1000);
        }
    }

    // As Kafka's Sanitizer.jmxSanitize names its metrics: a value with a character JMX reserves is quoted.
    private static String jmxSanitize(String value) {
        return value.matches("[^,=:*?\"\n]*") ? value : ObjectName.quote(value);
    }

    private static JMXConnector connect(JMXServiceURL url) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                return JMXConnectorFactory.connect(url);
            } catch (java.io.IOException e) {
                if (attempt % 60 == 0) {
                    System.err.println("no JMX at " + url + " for " + attempt + " s; still trying");
                }
                Thread.sleep(1000);
            }
        }
    }
}
