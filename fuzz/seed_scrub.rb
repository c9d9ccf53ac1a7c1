# frozen_string_literal: true

# Seeds fuzz/fuzz_scrub.c: two bytes of kinds (all of them) then a text, for
# slices of the README and texts of every value shape the built-in rules find.
#
#   ruby fuzz/seed_scrub.rb [fixtures_dir] [corpus_dir]

require "digest"
require "fileutils"

root = File.expand_path("..", __dir__)
corpus = ARGV[1] || File.join(root, "tmp/fuzz/corpus_scrub")
FileUtils.mkdir_p(corpus)

ALL = "\xFF\x07".b
values = ["4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "3782 822463 10005", "123-45-6789",
          "DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "sk-proj-4fJx9TqLm2VbN8cZ1rWs7YhK3pDe6GaU",
          "gsk_Tq8Rw2Xm6Lp0Vb4Nc9Zh3Jk7Gf1Ds5Ae8Yu2Io6Pq0Wn4Mb7Kx", "AKIAIOSFODNN7EXAMPLE",
          "ghp_Xq4Rt8Wm2Lc6Vb0Nn3Zk7Jh1Gf5Dd9Ss2Aa6P", "xoxb-2048-4096-Zq8Rt4Wm1Xc7Vb2N",
          "Authorization: Bearer abcDEF0123456789.ghiJKL-mno", "jane.doe@example.com", "+1 555-123-4567",
          "(555) 123-4567"]
inputs = values.map { |v| ALL + "x #{v} y" }
inputs << ALL + values.join(" ")
readme = File.binread(File.join(root, "README.md"))
(0...readme.bytesize).step(4096).first(8).each { |at| inputs << ALL + readme.byteslice(at, 4096) }
inputs.each { |input| File.binwrite(File.join(corpus, Digest::SHA1.hexdigest(input)), input) }
puts "fuzz/seed_scrub.rb: #{inputs.size} inputs in #{corpus}"
