# frozen_string_literal: true

# Ruby 3.4 and 4.0 readiness: the suite runs with deprecation warnings on, and one that
# names a file of the gem's own fails the run once the examples are done (the specs' and
# other gems' warnings are only printed). spec_helper loads this before the gem, so a
# warning given while the gem's files are parsed counts too.
module GemWarnings
  OWN = [File.expand_path("../../lib/", __dir__), File.expand_path("../../exe/", __dir__)].freeze
  SEEN = Queue.new

  def warn(message, *args, **kwargs)
    SEEN << message if OWN.any? { |dir| message.include?(dir) }
    super
  end
end

Warning[:deprecated] = true
Warning.extend(GemWarnings)

RSpec.configure do |config|
  config.after(:suite) do
    own = Array.new(GemWarnings::SEEN.size) { GemWarnings::SEEN.pop }
    raise "the gem's own files gave #{own.size} warning(s):\n#{own.uniq.join}" unless own.empty?
  end
end
