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

# A block that closed $stdout or $stderr ($stdout.close) would leave every later block
# mute: they are opened again on the same descriptors (Ruby keeps descriptors 0-2 open).
repair_stdio = lambda do
  begin
    $stdin = IO.new(0, 'r', autoclose: false) if $stdin.closed?
  rescue StandardError
    nil
  end
  [[1, '$stdout'], [2, '$stderr']].each do |fd, name|
    next unless eval(name).closed? # rubocop:disable Security/Eval

    begin
      io = IO.new(fd, 'w', autoclose: false)
      io.sync = true
      name == '$stdout' ? ($stdout = io) : ($stderr = io)
    rescue StandardError
      nil
    end
  end
end
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
      repair_stdio.call
      [$stdout, $stderr].each do |io|
        io.flush
      rescue StandardError
        nil
      end
      marker_io = File.open('/dev/tty', 'w') if marker_io.closed?
      marker_io.write("\e]5379;#{nonce};#{block};#{status}\a")
    rescue Interrupt
      retry
    end
  end
end
