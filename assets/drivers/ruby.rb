# oi-tui kernel driver for Ruby.
#
# Reads one command a line from the control FIFO named by ARGV[0]: "BLOCK NONCE PATH".
# Evaluates the code in PATH in one persistent top-level binding, so that local variables,
# methods and constants persist, then writes the end marker
# ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the terminal. Code never passes through stdin.
fifo = ARGV.shift
$stdout.sync = true
$stderr.sync = true
marker_io = begin
  File.open('/dev/tty', 'w')
rescue StandardError
  $stdout
end
marker_io.sync = true
control = File.open(fifo, 'r')
driver_file = File.expand_path(__FILE__)
block_binding = TOPLEVEL_BINDING

loop do
  line = begin
    control.gets
  rescue Interrupt
    next
  end
  break if line.nil?

  block, nonce, path = line.chomp.split(' ', 3)
  next if path.nil?

  status = 130
  begin
    status = begin
      eval(File.read(path), block_binding, "<block #{block}>", 1)
      0
    rescue SystemExit => e
      e.status
    rescue Interrupt
      $stderr.puts "\nInterrupted"
      130
    rescue Exception => e # rubocop:disable Lint/RescueException
      trace = (e.backtrace || []).reject { |l| l.include?(driver_file) }
      e.set_backtrace(trace)
      $stderr.puts e.full_message(highlight: false, order: :top)
      1
    end
  rescue Interrupt
    status = 130
  ensure
    begin
      $stdout.flush
      $stderr.flush
      marker_io.write("\e]5379;#{nonce};#{block};#{status}\a")
    rescue Interrupt
      retry
    end
  end
end
